"""How a pool worker's life is tied to the process that started it (the service, or
`legalsat batch`). Standard library only: a `legalsat batch` worker imports it without the
service's modules."""

from __future__ import annotations


def tie_to_server() -> None:
    """Die with the service (or `legalsat batch`, whose pool workers call it too), even
    mid-job: a worker's parent is the forkserver, which exits once no process holds its
    'alive' pipe; the worker lets go of its copy (only the service holds one then) and asks the
    kernel for SIGKILL when its parent exits (Linux PR_SET_PDEATHSIG), so kill -9 of the service
    takes the forkserver and every worker with it."""
    import ctypes
    import os
    import signal
    import sys
    from multiprocessing import forkserver

    server = forkserver._forkserver
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
        server._forkserver_alive_fd = None
    if sys.platform.startswith("linux"):
        parent = os.getppid()
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)
