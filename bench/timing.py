"""Interleaved timing, so that contestants compared with each other share the same machine noise.

On a small shared VM the speed drifts by tens of percent over seconds; timing A fully and then B
would measure the drift. Instead every repeat times each contestant once, alternating the order
(A B, B A, A B ...) so neither side always runs first, and the medians are compared.
"""

from __future__ import annotations

import math
import statistics
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Calibration loops until a batch takes this long, then scales to the wanted seconds per repeat.
_CALIBRATION_SECONDS = 0.02


@dataclass(frozen=True)
class Timing:
    """Per-operation times of one contestant, one value per repeat, in microseconds."""

    name: str
    number: int
    samples_us: tuple[float, ...]

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def min_us(self) -> float:
        return min(self.samples_us)

    @property
    def spread(self) -> float:
        """Slowest over fastest repeat: how noisy the machine was while this path ran."""
        return max(self.samples_us) / min(self.samples_us)


def paired_ratio(numerator: Timing, denominator: Timing) -> float:
    """Median over repeats of the ratio within a repeat, where the two ran back to back.

    Robust to drift that spans several repeats, which a ratio of the two medians is not.
    """
    return statistics.median(a / b for a, b in zip(numerator.samples_us, denominator.samples_us, strict=True))


def _loops_for(timer: timeit.Timer, seconds: float) -> int:
    """How many calls take about ``seconds``; the calibration doubles as a warm-up."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= _CALIBRATION_SECONDS:
            return max(1, math.ceil(number * seconds / elapsed))
        number *= 2


def interleaved(
    contestants: Sequence[tuple[str, Callable[[], object]]], *, repeat: int, seconds: float
) -> list[Timing]:
    """Time each contestant ``repeat`` times (``seconds`` per repeat), interleaved; gc is off while timing."""
    timers = [timeit.Timer(function) for _, function in contestants]
    numbers = [_loops_for(timer, seconds) for timer in timers]
    samples: list[list[float]] = [[] for _ in timers]
    order = list(range(len(timers)))
    for round_index in range(repeat):
        for index in order if round_index % 2 == 0 else reversed(order):
            samples[index].append(timers[index].timeit(numbers[index]) / numbers[index] * 1e6)
    return [
        Timing(name, number, tuple(times))
        for (name, _), number, times in zip(contestants, numbers, samples, strict=True)
    ]
