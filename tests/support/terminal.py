"""A command run on a pseudo-terminal, as a person at a terminal runs it: stdin, stdout and stderr are
the terminal, typed lines echo, and ``screen`` is what the terminal shows (newlines as ``\\n``, colours
stripped), for transcripts. Driven by events: ``expect`` returns once some text is on the screen, and
every wait is bounded (``tests.support.waiting.within``)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import re
import signal
import struct
import termios
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Self

from tests.support.waiting import within

_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
#: A fixed size, so that the command's output does not depend on the terminal the tests run in.
_ROWS, _COLUMNS = 24, 100


class Terminal:
    def __init__(self, process: asyncio.subprocess.Process, master: int) -> None:
        self.process = process
        self._master = master
        self._output = bytearray()
        #: Set when output arrives or the screen ends; cleared by the one waiter before it looks again.
        self._more = asyncio.Event()
        self._closed = False
        asyncio.get_running_loop().add_reader(master, self._read)

    @classmethod
    @contextlib.asynccontextmanager
    async def run(cls, command: Sequence[str], env: Mapping[str, str]) -> AsyncIterator[Self]:
        """``command`` on a new terminal; killed if still running at the end."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", _ROWS, _COLUMNS, 0, 0))
        try:
            process = await asyncio.create_subprocess_exec(
                *command, stdin=slave, stdout=slave, stderr=slave, env=dict(env)
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)  # the child's copies only: the screen ends (EIO) when the command exits
        terminal = cls(process, master)
        try:
            yield terminal
        finally:
            terminal._stop_reading()
            if process.returncode is None:
                process.kill()
                await process.wait()

    @property
    def screen(self) -> str:
        return _COLOURS.sub("", self._output.decode("utf-8", "replace").replace("\r\n", "\n"))

    async def expect(self, text: str) -> None:
        """Return once ``text`` is on the screen."""

        async def shown() -> None:
            await self._until(lambda: text in self.screen or self._closed)
            if text not in self.screen:
                raise AssertionError(f"the command ended without showing {text!r}; the screen:\n{self.screen}")

        await within(shown())

    def type(self, keys: str) -> None:
        """Keys typed at the terminal (a line ends with ``\\n``; Ctrl-D is ``\\x04``)."""
        os.write(self._master, keys.encode())

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the command (it does not own the terminal as a session, so not through the keys)."""
        self.process.send_signal(signal.SIGINT)

    async def exit_code(self) -> int:
        """The command's exit code, once it exited and everything it wrote is on the screen."""

        async def ended() -> int:
            code = await self.process.wait()
            await self._until(lambda: self._closed)
            return code

        return await within(ended())

    def _read(self) -> None:
        try:
            data = os.read(self._master, 65536)
        except OSError:  # EIO: every copy of the terminal's other end is closed
            data = b""
        if data:
            self._output += data
        else:
            self._stop_reading()
        self._more.set()

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            self._more.clear()
            await self._more.wait()

    def _stop_reading(self) -> None:
        if not self._closed:
            self._closed = True
            asyncio.get_running_loop().remove_reader(self._master)
            os.close(self._master)
