"""The echo backend splits its text a window at a time: the pieces must be those of the whole text."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.backends.echo import piece_windows

_WHOLE_TEXT_PIECES = re.compile(r"\s+|\S+\s*")
# Words and whitespace runs of all lengths, up to longer than the windows tried.
texts = st.lists(st.sampled_from(["a", "bc", "é", " ", "  ", "\t", "\n", "\u2003", "x" * 9, " " * 9]), max_size=30).map(
    "".join
)


@given(texts, st.integers(min_value=1, max_value=12))
def test_windows_hold_the_pieces_of_the_whole_text_in_order(text: str, window_chars: int) -> None:
    windows = list(piece_windows(text, window_chars))
    assert [piece for pieces in windows for piece in pieces] == _WHOLE_TEXT_PIECES.findall(text)
    assert all(pieces for pieces in windows)  # no empty window is handed out


def test_a_window_holds_about_window_chars_of_text() -> None:
    text = "word " * 10_000
    windows = list(piece_windows(text, 100))
    assert "".join(windows[0]) == text[:95]  # the piece cut at the window's end waits for the next
    assert max(len("".join(pieces)) for pieces in windows) <= 100
