"""A line typed at the terminal, as ``input()`` reads it, but one that Ctrl-C interrupts at any moment.

``input()`` blocks in read(2), where Python cannot raise KeyboardInterrupt until the read returns; a
SIGINT that comes after Python last checked for signals but before the read began (Ctrl-C pressed as
the prompt appears) is only noticed once a line is typed. Waiting first, in ``select``, for the
terminal or for the signal wakeup fd (``signal.set_wakeup_fd``: Python's C-level handler writes to it
whenever and on whichever thread a signal arrives) closes that gap: a signal already handled makes
the fd readable, and KeyboardInterrupt is raised as soon as ``select`` returns.
"""

from __future__ import annotations

import select
import signal
import socket
import sys


def read_line(prompt: str) -> str:
    """Show ``prompt`` on stdout and return the line typed (without its newline); ``EOFError`` at the
    end of input (Ctrl-D), ``KeyboardInterrupt`` on Ctrl-C. Only from the main thread (wakeup fds are)."""
    wakeup, handler_end = socket.socketpair()
    wakeup.setblocking(False)
    handler_end.setblocking(False)
    previous = signal.set_wakeup_fd(handler_end.fileno(), warn_on_full_buffer=False)
    try:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        while sys.stdin not in select.select([sys.stdin, wakeup], [], [])[0]:
            wakeup.recv(64)  # a signal whose handler returned (SIGINT's raised KeyboardInterrupt above)
        return input()
    finally:
        signal.set_wakeup_fd(previous)
        wakeup.close()
        handler_end.close()
