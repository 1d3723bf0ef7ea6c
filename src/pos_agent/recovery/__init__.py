"""Trapping recovery: the constraint the policy gets while the belief is trapped (Eq. 7)."""
