"""The builtin components `DataTable` and `Chart`: data only, no visuals (the client draws them).

    return table(columns=[("id", "Order"), ("total", "Total")], rows=orders, title="Your orders")
    return chart(labels=["mon", "tue"], series=[("revenue", [10.0, 12.5])], type="line")

Both accept the loading-state placeholder `{"state": "loading"}` (and `"empty"`, `"error"` with a
`message`), so a tool can push a skeleton first and the data later under the same id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agora_agent.genui.components import Component, Presentation, create_component

__all__ = ["BUILTIN_COMPONENTS", "Chart", "ChartProps", "DataTable", "DataTableProps", "chart", "table"]

UiState = Literal["loading", "empty", "error"]


class Column(BaseModel):
    key: str
    label: str | None = None


class Series(BaseModel):
    name: str
    values: list[float]


class _Placeholder(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: UiState | None = Field(default=None, description="A placeholder instead of data: loading, empty or error.")
    message: str | None = Field(default=None, max_length=500, description="Shown with an empty or error state.")


class DataTableProps(_Placeholder):
    """Rows under column headings; columns default to the first row's keys."""

    title: str | None = Field(default=None, max_length=200)
    columns: list[Column] | None = None
    rows: list[dict[str, Any]] = Field(default_factory=list, max_length=10_000)


class ChartProps(_Placeholder):
    """A bar, line or donut chart: one label per point, one or more named series of numbers."""

    title: str | None = Field(default=None, max_length=200)
    type: Literal["bar", "line", "donut"] = "bar"
    labels: list[str] = Field(default_factory=list, max_length=1_000)
    series: list[Series] = Field(default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _lengths(self) -> ChartProps:
        for s in self.series:
            if len(s.values) != len(self.labels):
                raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(self.labels)} labels")
        return self


DataTable: Component = create_component("DataTable", props=DataTableProps, description=DataTableProps.__doc__ or "")
Chart: Component = create_component("Chart", props=ChartProps, description=ChartProps.__doc__ or "")
BUILTIN_COMPONENTS: tuple[Component, ...] = (DataTable, Chart)


def table(
    rows: Iterable[Mapping[str, Any]],
    *,
    columns: Sequence[str | tuple[str, str]] | None = None,
    title: str | None = None,
    id: str | None = None,
) -> Presentation:
    """A `DataTable` presentation. `columns` are keys or `(key, label)` pairs, in display order."""
    cols = None
    if columns is not None:
        cols = [{"key": c, "label": c} if isinstance(c, str) else {"key": c[0], "label": c[1]} for c in columns]
    return DataTable(id=id, title=title, columns=cols, rows=[dict(r) for r in rows])


def chart(
    *,
    labels: Sequence[Any],
    series: Sequence[tuple[str, Sequence[float]]] | Mapping[str, Sequence[float]],
    type: Literal["bar", "line", "donut"] = "bar",
    title: str | None = None,
    id: str | None = None,
) -> Presentation:
    """A `Chart` presentation: `series` maps a name to one value per label."""
    pairs = series.items() if isinstance(series, Mapping) else series
    return Chart(
        id=id,
        title=title,
        type=type,
        labels=[str(label) for label in labels],
        series=[{"name": name, "values": list(values)} for name, values in pairs],
    )
