"""The one error `pos data` raises: a message that says what is wrong and how to fix it."""

from __future__ import annotations


class DataError(RuntimeError):
    """Data that cannot be fetched, verified or prepared; the message names the fix."""
