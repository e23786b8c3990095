"""One fixed colour per method, the same in every figure and table of a run's report."""

from __future__ import annotations

from collections.abc import Iterable

from harness.run.results import RunResults

#: Kelly's 22 colours of maximum contrast (white and black left out), in his order: the
#: first ones differ the most, so a small grid gets the most distinct hues.
KELLY = ("#F3C300", "#875692", "#F38400", "#A1CAF1", "#BE0032", "#C2B280", "#848482",
         "#008856", "#E68FAC", "#0067A5", "#F99379", "#604E97", "#F6A600", "#B3446C",
         "#DCD300", "#882D17", "#8DB600", "#654522", "#E25822", "#2B3D26")


def method_colours(methods: Iterable[str]) -> dict[str, str]:
    """Colour of each method label, assigned in sorted order (stable for a given run).

    Beyond 20 methods the colours repeat; the labels in the figures keep them apart.
    """
    return {method: KELLY[k % len(KELLY)] for k, method in enumerate(sorted(set(methods)))}


def run_colours(results: RunResults) -> dict[str, str]:
    """The colours of every method of a run: the one mapping all its figures and tables use."""
    return method_colours(results.cells["method"])
