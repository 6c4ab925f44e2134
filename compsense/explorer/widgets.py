"""The similarity-map explorer: two sentences typed in, their token x token cosine map on screen,
and every scorer's verdict beside it. A thin shell of ipywidgets over `compsense.explorer.core`, which
computes (and tests) everything shown here.

    from compsense.explorer.widgets import explorer
    explorer("The cat chased the dog.", "The dog chased the cat.")

Live or static. `interactive=None` (the default) decides by the front-end running the cell: live
widgets when it can answer `input()` (JupyterLab, Notebook, VS Code: a person is there), a static
figure and tables when it cannot (papermill, nbclient, nbval and nbconvert execute with
allow_stdin=False), so an executed notebook keeps a picture rather than a dead widget.
`interactive=True` or `False` forces either. Live widgets need `anywidget` (plotly's FigureWidget
is built on it); without it the explorer says so and renders statically.
"""

from __future__ import annotations

import html
import logging

import IPython  # ipywidgets requires it; looked up at call time (tests stand in a kernel)
import ipywidgets as w
import plotly.graph_objects as go
from IPython.display import HTML, display

from compsense.data.negatives import FAMILIES
from compsense.explorer.core import POOLED, PairView, Session, figure_similarity_map, scores_html, table_html

log = logging.getLogger(__name__)

DEFAULT_EXPLAIN = "F2 alignment"


def explorer(
    sentence_a: str = "The cat chased the dog.",
    sentence_b: str = "The dog chased the cat.",
    backbone: str = "tiny-bert",
    work_dir="runs/smoke",
    device=None,
    interactive: bool | None = None,
    seed: int = 0,
    near_misses: bool = True,
):
    """The explorer for two sentences; display the returned object (a notebook cell's last line).

    `backbone` is the encoder selected first (any other offline backbone and every Model A/B
    checkpoint under `work_dir` is in the selector). `near_misses` (static mode) adds the
    near-miss table of sentence A; live, the "near-misses" button shows it.
    """
    for name, value in (("sentence_a", sentence_a), ("sentence_b", sentence_b)):
        if not isinstance(value, str) or not value.strip():
            raise TypeError(
                f"explorer: {name} must be a non-empty sentence, got {value!r} ({type(value).__name__}); "
                f"from papermill pass it as text: -p {name} 'The dog chased the cat.' (a bare number is read as int)"
            )
    session = Session(work_dir, backbone, device=device, seed=seed)
    if interactive is None:
        interactive = live_frontend()
    if interactive:
        try:
            return ExplorerApp(session, sentence_a, sentence_b)
        except ImportError as err:  # FigureWidget without anywidget
            log.warning("live explorer unavailable (%s); rendering statically", err)
    return StaticExplorer(session, sentence_a, sentence_b, near_misses=near_misses)


def live_frontend() -> bool:
    """True inside a kernel whose current request comes from a front-end that answers input()."""
    kernel = getattr(IPython.get_ipython(), "kernel", None)
    if kernel is None:
        return False
    try:
        parent = kernel.get_parent("shell")
    except (AttributeError, TypeError):
        return bool(getattr(kernel, "_allow_stdin", False))
    return bool((parent or {}).get("content", {}).get("allow_stdin", False))


class StaticExplorer:
    """The explorer as a picture: the map figure, the scores and the near-miss table."""

    def __init__(
        self,
        session: Session,
        sentence_a: str,
        sentence_b: str,
        encoder: str | None = None,
        explain: str | None = DEFAULT_EXPLAIN,
        near_misses: bool = True,
    ):
        self.session = session
        self.encoder = encoder or session.default_encoder
        self.view: PairView = session.view(sentence_a, sentence_b, self.encoder, explain)
        self.figure = figure_similarity_map(self.view)
        self.table = None
        self.message = ""
        if near_misses:
            self.table, self.message = _near_miss_table(session, sentence_a, self.encoder)

    def html(self) -> str:
        parts = [f"<h4>Scores of A against B ({html.escape(self.encoder)})</h4>", scores_html(self.view)]
        if self.table is not None or self.message:
            parts.append("<h4>Near-misses of A</h4>")
            parts.append(table_html(self.table) if self.table is not None else f"<p>{html.escape(self.message)}</p>")
        return "".join(parts)

    def _ipython_display_(self):
        display(self.figure)
        display(HTML(self.html()))


class ExplorerApp:
    """Live widgets: text boxes, encoder and verifier selectors, the map (a FigureWidget) and the
    scores beside it, a near-miss button and its table. Text boxes update on Enter or leaving the
    box (continuous_update=False), so typing does not recompute per keystroke."""

    def __init__(self, session: Session, sentence_a: str, sentence_b: str, explain: str = DEFAULT_EXPLAIN):
        self.session = session
        wide = w.Layout(width="95%")
        self.text_a = w.Text(value=sentence_a, description="A", continuous_update=False, layout=wide)
        self.text_b = w.Text(value=sentence_b, description="B", continuous_update=False, layout=wide)
        self.encoder = w.Dropdown(
            options=list(session.encoders),
            value=session.default_encoder,
            description="encoder",
            layout=w.Layout(width="45%"),
        )
        verifiers = list(session.verifiers)
        self.explain = w.Dropdown(
            options=verifiers,
            value=explain if explain in verifiers else verifiers[0],
            description="explain",
            layout=w.Layout(width="45%"),
            tooltip="the verifier whose alignment is drawn on the map",
        )
        self.view = self._compute_view()
        self.figure = go.FigureWidget(figure_similarity_map(self.view))
        # The scores take what the map leaves, and wrap below it when that is under 340 px (a 1,366 px
        # screen with JupyterLab's file browser open): never cut off at the right edge.
        self.scores = w.HTML(
            scores_html(self.view),
            layout=w.Layout(flex="1 1 340px", min_width="340px", max_width="100%", margin="40px 0 0 10px"),
        )
        self.button = w.Button(
            description="near-misses of A",
            icon="random",
            tooltip="every family's near-misses of sentence A, scored by each scorer",
        )
        self.status = w.HTML("")
        self.table = w.HTML("")
        self.table_shown = False
        for name, widget in [
            ("sentence-a", self.text_a),
            ("sentence-b", self.text_b),
            ("encoder", self.encoder),
            ("explain", self.explain),
            ("scores", self.scores),
            ("near-miss-button", self.button),
            ("status", self.status),
            ("near-miss-table", self.table),
        ]:
            widget.add_class(f"compsense-{name}")
        self.figure_box = w.Box([self.figure], layout=w.Layout(flex="0 0 auto", overflow="auto"))
        self.figure_box.add_class("compsense-map")
        self.widget = w.VBox(
            [
                w.HTML("<b>Similarity-map explorer</b>: type a sentence and press Enter."),
                self.text_a,
                self.text_b,
                w.HBox([self.encoder, self.explain]),
                w.Box([self.figure_box, self.scores], layout=w.Layout(display="flex", flex_flow="row wrap")),
                w.HBox([self.button, self.status]),
                self.table,
            ]
        )
        self.widget.add_class("compsense-explorer")
        self.text_a.observe(self._on_a, names="value")
        self.text_b.observe(self.refresh, names="value")
        self.explain.observe(self.refresh, names="value")
        self.encoder.observe(self._on_a, names="value")
        self.button.on_click(self.show_near_misses)

    def _compute_view(self) -> PairView:
        return self.session.view(self.text_a.value, self.text_b.value, self.encoder.value, self.explain.value)

    def refresh(self, change=None) -> None:
        """Recompute the map and scores (cached embeddings make unchanged sentences free)."""
        self.status.value = "computing..."
        try:
            self.view = self._compute_view()
            fig = figure_similarity_map(self.view)
            with self.figure.batch_update():
                for target, source in zip(self.figure.data, fig.data):
                    props = source.to_plotly_json()
                    props.pop("type", None)
                    target.update(props, overwrite=True)
                for key in ("title", "height", "width", "xaxis", "yaxis"):
                    self.figure.layout[key] = fig.layout[key]
            self.scores.value = scores_html(self.view)
            self.status.value = ""
        except Exception as err:  # a callback's exception would vanish into the log console
            log.exception("explorer refresh failed")
            self.status.value = _error_html(err)

    def _on_a(self, change=None) -> None:
        self.refresh()
        if self.table_shown:
            self.show_near_misses()

    def show_near_misses(self, button=None) -> None:
        self.status.value = "generating and scoring near-misses..."
        try:
            table, message = _near_miss_table(self.session, self.text_a.value, self.encoder.value)
            self.table.value = table_html(table) if table is not None else f"<p>{html.escape(message)}</p>"
            self.table_shown = True
            self.status.value = ""
        except Exception as err:
            log.exception("explorer near-misses failed")
            self.status.value = _error_html(err)

    def _ipython_display_(self):
        display(self.widget)


def _near_miss_table(session: Session, sentence: str, encoder: str | None):
    """(table, "") or (None, why there is none)."""
    table = session.near_miss_table(sentence, encoder)
    if len(table) <= 1:
        return None, no_near_miss_message(sentence)
    return table, ""


def no_near_miss_message(sentence: str) -> str:
    """Why the button found nothing: what each family's rules look for, so the user knows what to type."""
    wanted = "; ".join(f"{f.name}: {f.description}" for f in FAMILIES.values())
    return f"no near-miss family applies to {sentence!r}. The rules look for what they can change: {wanted}."


def _error_html(err: Exception) -> str:
    return f'<span style="color:#b00">{html.escape(f"{err.__class__.__name__}: {err}")}</span>'


__all__ = ["explorer", "live_frontend", "ExplorerApp", "StaticExplorer", "POOLED"]
