"""A gated Gradio event that streams: each metric's row appears as soon as it is computed.

:func:`gated_stream` is :func:`dialeval.ui.serving.gated` (the same gate: a slot held until the computation stops,
cancellation when the client goes away, the per-client limit) as an async generator: the handler, in its worker
thread, calls ``publish(outputs)`` after each metric, and every published value is sent to the page at once; the
handler's return value comes last. ``gradio_client``'s ``predict`` still returns that last value.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from dialeval.ui.inputs import InputError
from dialeval.ui.serving import Server


def gated_stream(server: Server, handler: Callable[..., tuple[Any, ...]],
                 refused: Callable[[str], tuple[Any, ...]]) -> Callable[..., AsyncIterator[tuple[Any, ...]]]:
    """An async-generator event function running ``handler(request, publish, *inputs)`` through ``server.gate``;
    what ``publish`` receives is yielded while it runs, then its result (or ``refused(message)``)."""
    import gradio as gr

    from dialeval.cli import error_line
    from dialeval.models.runtime import Cancelled

    async def on_event(progress: Any = gr.Progress(track_tqdm=True), request: Any = None,  # noqa: B008
                       *inputs: Any) -> AsyncIterator[tuple[Any, ...]]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()

        def publish(outputs: tuple[Any, ...]) -> None:  # called from the worker thread
            loop.call_soon_threadsafe(queue.put_nowait, outputs)

        task = asyncio.ensure_future(server.gate.run(handler, request, publish, *inputs, request=request))
        try:
            while not task.done():
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                else:
                    getter.cancel()
            while not queue.empty():  # rows published just before the end, in order
                yield queue.get_nowait()
            try:
                out = task.result()
            except (InputError, Cancelled) as exc:
                yield refused(error_line(exc))
                return
            yield out if out is not None else refused("the request was cancelled")
        finally:
            if not task.done():  # the page went away or Gradio cancelled the event: the gate cancels the work
                task.cancel()

    on_event.__annotations__ = {**on_event.__annotations__, "request": gr.Request}
    on_event.dialeval_gated = True  # type: ignore[attr-defined]  # see dialeval.ui.serving.prepare
    return on_event
