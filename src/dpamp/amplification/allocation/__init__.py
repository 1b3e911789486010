"""Random allocation and shuffled batches: the samplers of real training loops.

| module      | what                                                                        |
|-------------|-----------------------------------------------------------------------------|
| ``grid``    | the likelihood ratio of one step on a linear grid, above and below in convex order |
| ``pld``     | certified PLD bounds of one epoch of random allocation, any base with a PLD (FS25b) |
| ``rdp``     | the integer-order RDP of random allocation of the Gaussian (FS25a)          |
| ``shuffle`` | proven lower bounds for shuffled fixed-size batches (Chua et al.)           |

FS25a: V. Feldman, M. Shenfeld, *Privacy amplification by random allocation*, arXiv:2502.08202.
FS25b: V. Feldman, M. Shenfeld, *Efficient privacy loss accounting for subsampling and random
allocation*, arXiv:2602.17284. The mechanism type is :class:`dpamp.mechanisms.allocated.Allocated`
(``mech.subsample(dp.RandomAllocation(k, t))``, one epoch).
"""
