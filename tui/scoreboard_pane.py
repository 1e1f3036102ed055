"""Scoreboard: every evaluation of a benchmark as a bar over time and a row in a table.

Records come from ``engine.core.scoreboard.read_heads``: their headlines only, so opening the pane
never parses the per-run rows of a long history. Pass rate and tokens are not part of a record
(PenguinHarness' scoreboard keeps scores, cost and duration), so a second worker reads them
from each run's results.jsonl right after the records are shown: the table paints at once and
its two columns fill in. Large counts are shortened (2.69M), never cut.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from engine.core.benchmark import benchmark_ids
from engine.core.errors import SkillsmithError
from engine.core.scoreboard import RecordHead, read_heads
from engine.core.workspace import Workspace
from engine.views.rows import RunFigures, compact_count, record_versions, run_figures
from tui.navigation import VimTable
from tui.report_key import REPORT_BINDING, write_report_of
from tui.score_chart import ScoreChart

Metric = Literal["score", "pass rate", "tokens"]
METRICS: tuple[Metric, ...] = ("score", "pass rate", "tokens")


class ScoreboardPane(Vertical):
    """Header (benchmark, metric) · chart · record table."""

    DEFAULT_CSS = """
    ScoreboardPane > #score-header { height: 1; padding: 0 1; background: $panel; }
    ScoreboardPane > ScoreChart { height: 8; }
    ScoreboardPane > #score-caption { height: 1; padding: 0 1; color: $text-muted; }
    ScoreboardPane > VimTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "cycle_metric", "Chart metric", id="chart_metric"),
        Binding("right_square_bracket", "benchmark(1)", "Next benchmark", id="next_benchmark"),
        Binding("left_square_bracket", "benchmark(-1)", "Prev benchmark", id="prev_benchmark"),
        REPORT_BINDING,
    ]

    class _Loaded(Message):
        def __init__(
            self,
            benchmarks: list[str],
            bench: str | None,
            records: list[RecordHead],
            error: str | None,
        ) -> None:
            super().__init__()
            self.benchmarks = benchmarks
            self.bench = bench
            self.records = records
            self.error = error

    class _Figures(Message):
        def __init__(self, bench: str, figures: list[RunFigures | None]) -> None:
            super().__init__()
            self.bench = bench
            self.figures = figures

    def __init__(self, workspace: Workspace, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workspace = workspace
        self.benchmarks: list[str] = []
        self.bench: str | None = None
        self.records: list[RecordHead] = []
        self.figures: list[RunFigures | None] | None = None
        self.metric: Metric = "score"
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Static("", id="score-header", markup=False)
        yield ScoreChart(id="score-chart")
        yield Static("", id="score-caption", markup=False)
        table = VimTable(id="score-records")
        table.add_column("#", key="n")
        table.add_column("when", key="when")
        table.add_column("versions", key="versions")
        table.add_column("score", key="score")
        table.add_column("pass rate", key="pass_rate")
        table.add_column("tokens", key="tokens")
        table.add_column("cost $", key="cost")
        table.add_column("ms", key="duration")
        table.add_column("summary", key="summary")
        yield table

    # -- loading -------------------------------------------------------------------------------
    def reload(self) -> None:
        self._load(self.bench)

    @work(thread=True, exclusive=True, group="scoreboard-load", exit_on_error=False)
    def _load(self, wanted: str | None) -> None:
        benchmarks = benchmark_ids(self.workspace)
        bench = wanted if wanted in benchmarks else (benchmarks[0] if benchmarks else None)
        records: list[RecordHead] = []
        error = None
        if bench is not None:
            try:
                records = read_heads(self.workspace.benchmarks_dir / bench)
            except SkillsmithError as exc:
                error = str(exc)
        if not get_current_worker().is_cancelled:
            self.post_message(self._Loaded(benchmarks, bench, records, error))

    @work(thread=True, exclusive=True, group="scoreboard-figures", exit_on_error=False)
    def _load_figures(self, bench: str, records: list[RecordHead]) -> None:
        figures: list[RunFigures | None] = []
        for record in records:
            if get_current_worker().is_cancelled:
                return
            try:
                variant = record.variant or "skill"
                found = (
                    run_figures(self.workspace, record.run_id, variant) if record.run_id else None
                )
            except SkillsmithError:
                found = None
            figures.append(found)
        self.post_message(self._Figures(bench, figures))

    @on(_Loaded)
    def _loaded(self, message: _Loaded) -> None:
        changed_bench = message.bench != self.bench
        self.benchmarks, self.bench, self.records = (
            message.benchmarks,
            message.bench,
            message.records,
        )
        self.loaded = True
        if changed_bench or self.figures is None or len(self.figures) != len(self.records):
            self.figures = None
        table = self.query_one(VimTable)
        previous = table.highlighted_key
        table.clear()
        for index, record in enumerate(self.records):
            table.add_row(
                str(index + 1),
                record.timestamp,
                Text(record_versions(record)),  # rich Text: measured for the column, no markup
                f"{record.score:.2f}",
                "…",
                "…",
                "–" if record.cost is None else f"{record.cost:.4f}",
                str(record.duration_ms),
                Text(record.summary_title),  # "[skill]" is text, not markup
                key=str(index),
            )
        if previous is not None and not changed_bench:
            table.move_to_key(previous)
        elif self.records:
            table.move_cursor(row=len(self.records) - 1, animate=False)
        if message.error:
            self.query_one("#score-caption", Static).update(message.error)
        self._fill_figures()  # the last figures stand until the fresh ones arrive
        if self.records:
            self._load_figures(self.bench or "", self.records)
        self._plot()

    @on(_Figures)
    def _figures_loaded(self, message: _Figures) -> None:
        if message.bench != self.bench or len(message.figures) != len(self.records):
            return
        self.figures = message.figures
        self._fill_figures()
        self._plot()

    def _fill_figures(self) -> None:
        if self.figures is None:
            return
        table = self.query_one(VimTable)
        for index, found in enumerate(self.figures):
            rate = "–" if found is None or found.pass_rate is None else f"{found.pass_rate:.2%}"
            tokens = "–" if found is None else compact_count(found.tokens)
            table.update_cell(str(index), "pass_rate", rate)
            table.update_cell(str(index), "tokens", tokens)

    # -- drawing -------------------------------------------------------------------------------
    def _plot(self) -> None:
        chart = self.query_one(ScoreChart)
        bench = self.bench or "no benchmark"
        position = (
            f" ({self.benchmarks.index(self.bench) + 1}/{len(self.benchmarks)}, [ ] switch)"
            if self.bench in self.benchmarks and len(self.benchmarks) > 1
            else ""
        )
        self.query_one("#score-header", Static).update(
            f"{bench}{position} · {len(self.records)} evaluations · chart: {self.metric} (m)"
        )
        if self.metric == "score":
            chart.set_values([r.score for r in self.records], ceiling=100.0)
        elif self.figures is None:
            chart.set_values([], empty=f"Reading {self.metric} from the runs…")
        elif self.metric == "pass rate":
            chart.set_values([f.pass_rate if f else None for f in self.figures], ceiling=1.0)
        else:
            chart.set_values([float(f.tokens) if f else None for f in self.figures])
        self._caption()

    def _caption(self) -> None:
        table = self.query_one(VimTable)
        key = table.highlighted_key
        chart = self.query_one(ScoreChart)
        if key is None:
            chart.highlighted = None
            self.query_one("#score-caption", Static).update("")
            return
        index = int(key)
        chart.highlighted = index
        record = self.records[index]
        versions = record_versions(record)
        run = f" · run {record.run_id}" if record.run_id else ""
        found = self.figures[index] if self.figures and index < len(self.figures) else None
        tokens = f" · tokens {found.tokens:,}" if found is not None else ""
        self.query_one("#score-caption", Static).update(
            f"#{index + 1} {record.timestamp} · {versions} · score {record.score:.2f}{tokens}{run}"
        )

    @on(DataTable.RowHighlighted, "#score-records")
    def _record_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if self.records:
            self._caption()

    # -- actions -------------------------------------------------------------------------------
    def action_cycle_metric(self) -> None:
        self.metric = METRICS[(METRICS.index(self.metric) + 1) % len(METRICS)]
        if self.metric != "score" and self.figures is None and self.bench is not None:
            self._load_figures(self.bench, self.records)
        self._plot()

    def action_write_report(self) -> None:
        """The report of the highlighted evaluation's run (H)."""
        key = self.query_one(VimTable).highlighted_key
        run_id = self.records[int(key)].run_id if key is not None and self.records else None
        write_report_of(self, self.workspace, run_id)

    def action_benchmark(self, step: int) -> None:
        if not self.benchmarks:
            return
        index = self.benchmarks.index(self.bench) if self.bench in self.benchmarks else 0
        self._load(self.benchmarks[(index + step) % len(self.benchmarks)])
