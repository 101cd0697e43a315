"""Work spread over forked processes that inherit one shared object (a problem), so it is
never pickled: the dataset's labelling and the robot check's multi-start optimisations."""

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

# What the worker functions read (set before the fork, inherited by the children).
_SHARED = None


def shared():
    """The object the current forked_map shares with its workers."""
    return _SHARED


@contextmanager
def forked_map(workers: int, state) -> Iterator[Callable[[Callable, Iterable], Iterator]]:
    """imap over `workers` forked processes (this process for 1) that see `state` through
    shared(); results come in order."""
    global _SHARED
    _SHARED = state
    try:
        if workers <= 1:
            yield map
        else:
            with multiprocessing.get_context('fork').Pool(workers) as pool:
                yield pool.imap
    finally:
        _SHARED = None
