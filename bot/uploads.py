"""Files Stratus puts into an incident's thread: a card's before/after chart and the
postmortem draft, uploaded the way Slack recommends today (``files.getUploadURLExternal``, a
POST of the bytes, ``files.completeUploadExternal`` with ``channel_id`` and ``thread_ts`` —
``AsyncWebClient.files_upload_v2`` does the three).

A thin executor: what a chart shows is decided by ``agents.telemetry_chart`` and what a
postmortem says by ``incidents.postmortem``; this module renders, uploads and remembers which
file a card shows (``bot.links``), so an unchanged chart is never uploaded twice and a redrawn
one replaces the one before it in the thread.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from agents.telemetry import Telemetry
from agents.telemetry_chart import chart_for
from agents.telemetry_links import FigureLinks, LinkConfig, links_for, public_base
from bot import chart_png
from bot.links import ChartFile, MessageRef
from bot.runtime import Runtime
from bot.telemetry import CardChart, chart_alt
from bot.text import chart_words
from incidents.model import Incident
from proposals.model import Proposal

log = logging.getLogger("stratus.bot")
UPLOAD_SECONDS = 10.0  # the three calls of one upload together


def in_thread(chart: CardChart) -> CardChart:
    """The card's chart as a line pointing at the file in the thread (for when Slack refuses
    the image block: a file uploaded a moment ago it has not processed yet)."""
    if not chart.file_id:
        return chart
    return CardChart(missing=chart_words.CHART_IN_THREAD)


class Uploads:
    def __init__(self, runtime: Runtime, client: AsyncWebClient, links: LinkConfig | None) -> None:
        self.rt = runtime
        self.client = client
        self.links = links or LinkConfig()
        self._locks: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------ links

    def figure_links(
        self, proposal: Proposal, incident: Incident | None, telemetry: Telemetry | None
    ) -> FigureLinks | None:
        metrics = telemetry.metrics if telemetry is not None else None
        if metrics is None or metrics.start is None or metrics.read_at is None:
            return None
        config = self.links
        prometheus = self.rt.workflow.prometheus
        if not config.prometheus and prometheus is not None:
            # No public URL configured: the one Stratus queries, without its credentials.
            base = public_base(prometheus.config.url, "STRATUS_PROMETHEUS_URL")
            config = LinkConfig(base, config.grafana, config.dashboards)
        return links_for(
            config,
            promql=metrics.promql,
            start=metrics.start,
            end=metrics.read_at,
            namespace=proposal.target.namespace,
            workload=proposal.target.name,
            incident_start=incident.created_at.timestamp() if incident else None,
            incident_end=incident.updated_at.timestamp()
            if incident is not None and not incident.is_open
            else None,
        )

    # ------------------------------------------------------------------ a card's chart

    def pending_chart(self, telemetry: Telemetry | None) -> CardChart:
        """What a card shows before its chart is drawn: that it is coming, or why there is
        none (no metrics)."""
        if chart_for(telemetry.metrics if telemetry is not None else None) is None:
            return CardChart(missing=chart_words.NO_CHART_NO_METRICS)
        return CardChart(missing=chart_words.CHART_DRAWING, drawing=True)

    async def card_chart(
        self, proposal: Proposal, telemetry: Telemetry | None, thread: MessageRef | None
    ) -> CardChart:
        """The chart a card shows: the file uploaded for what its telemetry says now (drawn
        and uploaded when that moved), or why there is none."""
        metrics = telemetry.metrics if telemetry is not None else None
        chart = chart_for(metrics)
        if chart is None or metrics is None:
            return CardChart(missing=chart_words.NO_CHART_NO_METRICS)
        target = str(proposal.target)
        alt = chart_alt(metrics, target)
        title = chart_words.chart_title(target)
        lock = self._locks.setdefault(proposal.id, asyncio.Lock())
        async with lock:
            shown = await self.rt.call(self.rt.links.chart, proposal.id)
            if shown is not None and shown.digest == chart.digest:
                if shown.file_id:
                    return CardChart(shown.file_id, shown.alt, title)
                return CardChart(missing=chart_words.chart_upload_failed(shown.why))
            if thread is None:
                return CardChart(missing=chart_words.chart_upload_failed("no thread"))
            png = await self.rt.work(chart_png.render, chart, title=title)
            file_id, why = await self._upload(
                thread,
                content=png,
                filename=chart_words.chart_filename(proposal.id),
                title=title,
                alt=alt,
            )
            await self.rt.call(
                self.rt.links.show_chart,
                proposal.id,
                ChartFile(file_id=file_id, digest=chart.digest, alt=alt, why=why),
            )
            if file_id and shown is not None and shown.file_id:
                await self._delete(shown.file_id)  # the redrawn chart replaces it
        if not file_id:
            return CardChart(missing=chart_words.chart_upload_failed(why))
        return CardChart(file_id, alt, title)

    # ------------------------------------------------------------------ a document

    async def post_document(
        self, thread: MessageRef, *, content: str, filename: str, title: str, comment: str
    ) -> tuple[str, str]:
        """Upload a text document into ``thread``: (its file id, "") or ("", why not)."""
        return await self._upload(
            thread, content=content.encode(), filename=filename, title=title, comment=comment
        )

    # ------------------------------------------------------------------ Web API

    async def _upload(
        self,
        thread: MessageRef,
        *,
        content: bytes,
        filename: str,
        title: str,
        alt: str | None = None,
        comment: str | None = None,
    ) -> tuple[str, str]:
        try:
            # Bounded: a card waits for its chart, and must not wait on a Slack that hangs.
            response = await asyncio.wait_for(
                self._files_upload_v2(
                    thread,
                    content=content,
                    filename=filename,
                    title=title,
                    alt=alt,
                    comment=comment,
                ),
                timeout=UPLOAD_SECONDS,
            )
        except TimeoutError:
            why = f"Slack did not take the file within {UPLOAD_SECONDS:g} s"
            log.error("file upload failed: %s", why)
            return "", why
        except SlackApiError as error:
            why = str(error.response.get("error") or "error")
            log.error("file upload failed: %s", why)
            return "", why
        except (SlackRequestError, aiohttp.ClientError) as error:
            why = f"the upload did not go through ({type(error).__name__})"
            log.error("file upload failed: %s", why)
            return "", why
        files = response.get("files") or []
        file_id = str(files[0].get("id", "")) if files else ""
        return (file_id, "") if file_id else ("", "Slack named no file")

    async def _files_upload_v2(
        self,
        thread: MessageRef,
        *,
        content: bytes,
        filename: str,
        title: str,
        alt: str | None,
        comment: str | None,
    ) -> AsyncSlackResponse:
        return await self.client.files_upload_v2(
            channel=thread.channel,
            thread_ts=thread.ts or None,
            content=content,
            filename=filename,
            title=title,
            alt_txt=alt,
            initial_comment=comment,
            request_file_info=False,
        )

    async def _delete(self, file_id: str) -> None:
        try:
            await self.client.files_delete(file=file_id)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as error:
            # A chart left over in the thread is untidy, not wrong: the card shows the new one.
            log.warning("could not delete the replaced chart %s: %s", file_id, error)
