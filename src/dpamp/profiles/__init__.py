"""Privacy profiles and hockey-stick divergences (000)."""


def privacy_profile(mechanism, epsilon):
    raise NotImplementedError("privacy profiles are not implemented yet")
