"""The run's progress bar on a terminal (rich, imported only when a bar is shown)."""

from __future__ import annotations

from collections.abc import Sequence

from reasonwire.eval._config import Target
from reasonwire.eval._executor import Executor
from reasonwire.eval._steps import estimate_cells


class Progress:
    """Calls done (sent or reused) against the cells the run will send at least, with the
    spend, errors and reuse so far."""

    def __init__(self, targets: Sequence[Target], executor: Executor) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
        from rich.progress import Progress as Bar

        self.x = executor
        self.bar = Bar(
            TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.description}"), transient=False,
        )  # fmt: skip
        self.task = self.bar.add_task("", total=estimate_cells(targets))
        executor.on_progress = self.advance

    def advance(self, n: int) -> None:
        t = self.bar.tasks[0]
        if t.total is not None and t.completed + n > t.total:
            self.bar.update(self.task, total=t.completed + n)
        desc = (
            f"spend ${self.x.budget.spent():.4f}  errors {self.x.stats.errors}  "
            f"reused {self.x.stats.reused}"
        )
        self.bar.update(self.task, advance=n, description=desc)

    def start(self) -> None:
        self.bar.start()

    def stop(self) -> None:
        self.bar.stop()
