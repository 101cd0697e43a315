"""Pinocchio workspaces per thread: solves may run concurrently (the node's executor)."""

import threading

import pinocchio as pin


class PerThreadData:
    """Class attribute: `obj.data` is the calling thread's pinocchio.Data of `obj.model`."""

    def __get__(self, obj, owner=None) -> pin.Data:
        if obj is None:
            return self
        local = obj.__dict__.setdefault('_thread_data', threading.local())
        if not hasattr(local, 'data'):
            local.data = obj.model.createData()
        return local.data
