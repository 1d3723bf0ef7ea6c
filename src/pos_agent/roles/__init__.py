"""What every role call shares: the model-call wrapper, role limits and profiles, answer schemas."""
