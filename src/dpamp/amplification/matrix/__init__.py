"""Amplification of matrix mechanisms (correlated noise) by sampling: the conditional
composition bound for Poisson sampling (Choquette-Choo, Ganesh, Steinke & Thakurta, ICLR 2024):
:mod:`.tails` (the posterior of a participation pattern given the past), :mod:`.steps` (one
step's dominating mixture of Gaussians), :mod:`.conditional` (the theorem and the steps),
:mod:`.query` (epsilon and delta with the slack of the bad histories)."""
