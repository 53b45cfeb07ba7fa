"""Work-done progress for a running job: stage and batches, cancellable from the editor."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from lsprotocol import types

from quickdev.server.app import QuickdevServer
from quickdev.server.jobs import FINISHED, Run
from quickdev.server.log import log


class RunProgress:
    def __init__(self, ls: QuickdevServer, run: Run) -> None:
        self._ls = ls
        self._run = run
        self._token = f"quickdev/run/{run.run_id}"
        self._open = False
        self._last_message = ""

    async def begin(self, on_cancel: Callable[[], object]) -> None:
        window = self._ls.client_capabilities.window
        if not (window and window.work_done_progress):
            return
        try:
            await self._ls.work_done_progress.create_async(self._token)
        except Exception:
            log.warning("the client refused a progress token; running without progress")
            return
        self._open = True
        run = self._run
        self._ls.work_done_progress.begin(
            self._token,
            types.WorkDoneProgressBegin(
                title=f"Quick-dev {run.request.mode}: {run.script.name}",
                cancellable=True,
                message=self._message(),
            ),
        )
        loop = asyncio.get_running_loop()

        def cancelled(future: Future[Any]) -> None:
            if future.cancelled() and run.status not in FINISHED:
                loop.call_soon_threadsafe(on_cancel)

        self._ls.work_done_progress.tokens[self._token].add_done_callback(cancelled)
        if run.status in FINISHED:
            self.update()

    def update(self) -> None:
        if not self._open:
            return
        if self._run.status in FINISHED:
            self._open = False
            self._ls.work_done_progress.end(
                self._token, types.WorkDoneProgressEnd(message=self._run.status)
            )
            return
        message = self._message()
        if message != self._last_message:
            self._last_message = message
            self._ls.work_done_progress.report(
                self._token, types.WorkDoneProgressReport(message=message, cancellable=True)
            )

    def _message(self) -> str:
        run = self._run
        batches = "1 batch" if run.batches_done == 1 else f"{run.batches_done} batches"
        return f"{run.stage} · {batches}"
