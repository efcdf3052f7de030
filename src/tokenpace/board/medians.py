"""A model's row on the board: the median across its endpoints of each one's headline figure (board rule).

Each endpoint speaks once, whatever its samples: a provider sampled twice as often does not weigh twice. Which
endpoints speak (enough counted samples, not failing) is the board's to say; the success rate and the canary's
pass rate pool every endpoint's samples instead, so that a provider failing every request still shows.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tokenpace.measure.stats import success_rate
from tokenpace.prompts import canary
from tokenpace.store.windows import EndpointRow


@dataclass(frozen=True, slots=True)
class ModelRow:
    """A model on one workload: the median across its endpoints of each endpoint's headline figure, and the
    success rate over every sample of every endpoint serving it."""

    model: str
    workload: str
    providers: int  # endpoints (provider x plan) that contributed
    samples: int  # their samples, summed
    output_speed: float | None
    ttft_ms: float | None
    e2e_ms: float | None
    success_rate: float | None
    simulated: bool = False  # any contributing endpoint is a simulator
    region: str | None = None  # its rows' region (None: every region pooled)
    canary_checked: int = 0  # every endpoint's canary verdicts, pooled as the success rate is
    canary_passed: int = 0

    @property
    def canary_rate(self) -> float | None:
        """passed / checked of the canary over every endpoint serving the model; None when none was judged."""
        return canary.pass_rate(self.canary_passed, self.canary_checked)


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def model_rows(
    rows: Sequence[EndpointRow],
    statistic: str,
    *,
    min_samples: int = 1,
    canonical: Callable[[str], str] = str,
    speaks: Callable[[EndpointRow], bool] = lambda r: True,
) -> list[ModelRow]:
    """Per (model, workload, region): median across endpoints of their headline figures, sorted by model, workload.

    ``canonical`` names the model a provider's id means (config.models: one name for the same weights), so
    ``llama-3.1-8b-instant`` and ``llama3.1-8b`` are one model row; by default every id is its own model.

    Endpoints with fewer than ``min_samples`` counted samples are left out of the figures: too few to speak
    for a model; so are those ``speaks`` refuses (the board's failing ones: a failing provider's figure alone
    was a model's headline while three endpoints served it). The success rate and the canary's pass rate pool
    every endpoint's samples: a provider that fails every request has no counted sample, and the median of the
    others' rates would hide it.
    """
    every: dict[tuple[str, str, str], list[EndpointRow]] = {}
    for r in rows:  # per region too when rows are (an endpoint's region is not another endpoint)
        every.setdefault((canonical(r.model), r.workload, r.region or ""), []).append(r)
    found = []
    for (model, workload, _), group in sorted(every.items()):
        speaking = [r for r in group if r.counted >= min_samples and speaks(r)]
        if speaking or any(r.counted >= min_samples for r in group):  # only failing ones: a row, its failures shown
            found.append(_model_row(model, workload, speaking, group, statistic))
    return found


def _model_row(
    model: str, workload: str, group: Sequence[EndpointRow], every: Sequence[EndpointRow], statistic: str
) -> ModelRow:
    def med(metric: str) -> float | None:
        return _median(r.figure(metric).headline(statistic) for r in group)

    pooled = success_rate(sum(r.ok for r in every), sum(r.samples for r in every), sum(r.cancelled for r in every))
    return ModelRow(
        model, workload, len(group), sum(r.samples for r in group),
        med("output_speed"), med("ttft_ms"), med("e2e_ms"), pooled, any(r.simulated for r in every), every[0].region,
        sum(r.canary_checked for r in every), sum(r.canary_passed for r in every),
    )  # fmt: skip
