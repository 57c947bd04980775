"""The prefix-cache view of a server: what vLLM's KV cache events say is in its prefix cache.

Fed with :class:`~workbench.remote.kv_events_state.KVEventsState` snapshots through
:meth:`PrefixCacheView.show_events_state` (on the GUI thread). The events name blocks by hash as they
enter and leave the prefix cache; they carry no block ids, so this view lists contents, grouped by
chain (each block's parent hash), and never draws a pool layout.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable

from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QListWidget, QSplitter, QTableWidget,
                               QTableWidgetItem, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)
from PySide6.QtCore import Qt, QTimer

from workbench.remote.kv_events_state import KVEventsState, RankEventsState, StoredBlock
from workbench.remote.kv_events_wire import hash_text

TITLE = ("Prefix-cache contents from vLLM's KV events: blocks stored and removed; "
         "events carry no physical block layout")
COUNT_COLUMNS = ("rank", "events", "stored now", "blocks stored", "blocks removed", "clears", "restarts",
                 "last seq", "caught up")
MAX_BLOCKS_SHOWN = 400  # rows in the chain tree; the counts above are always whole
ALL_RANKS = -1


class PrefixCacheView(QWidget):
    """Counts per rank and summed, the stored blocks grouped by chain, recent removals, and a notice
    when the contents are incomplete (a gap in the events) or when no events arrive at all."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, objectName="prefixCacheView")
        self._state: KVEventsState | None = None
        self._latest: Callable[[], KVEventsState] | None = None
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._on_timer_timeout)
        self.title = QLabel(TITLE, objectName="prefixCacheTitle", wordWrap=True)
        self.title.setStyleSheet("font-weight: bold;")
        self.notice = QLabel(objectName="prefixCacheNotice", wordWrap=True)
        self.notice.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.notice.setStyleSheet("#prefixCacheNotice { background: #fff4ce; border: 1px solid #e0b000; padding: 4px; }")
        self.notice.hide()
        self.rank_choice = QComboBox(objectName="prefixCacheRank")
        self.rank_choice.currentIndexChanged.connect(self._on_rank_choice_changed)
        self.counts = QTableWidget(0, len(COUNT_COLUMNS), objectName="prefixCacheCounts")
        self.counts.setHorizontalHeaderLabels(COUNT_COLUMNS)
        self.counts.verticalHeader().hide()
        self.counts.setEditTriggers(QTableWidget.NoEditTriggers)
        self.chains = QTreeWidget(objectName="prefixCacheChains")
        self.chains.setHeaderLabels(("block hash", "parent hash", "tokens", "medium", "rank", "seq"))
        self.chains_caption = QLabel(objectName="prefixCacheChainsCaption")
        self.removals = QListWidget(objectName="prefixCacheRemovals")
        self._build_layout()

    def _build_layout(self) -> None:
        chooser = QHBoxLayout()
        chooser.addWidget(QLabel("Show"))
        chooser.addWidget(self.rank_choice)
        chooser.addStretch(1)
        stored = QWidget()
        stored_layout = QVBoxLayout(stored)
        stored_layout.setContentsMargins(0, 0, 0, 0)
        stored_layout.addWidget(self.chains_caption)
        stored_layout.addWidget(self.chains)
        removed = QWidget()
        removed_layout = QVBoxLayout(removed)
        removed_layout.setContentsMargins(0, 0, 0, 0)
        removed_layout.addWidget(QLabel("Recently removed (newest first)"))
        removed_layout.addWidget(self.removals)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(stored)
        split.addWidget(removed)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.notice)
        layout.addLayout(chooser)
        layout.addWidget(self.counts)
        layout.addWidget(split, 1)

    # -- fed by whoever follows the events -----------------------------------------------------------
    def show_events_state(self, state: KVEventsState) -> None:
        """Shows one snapshot (the same one twice is shown once)."""
        if state is self._state:
            return
        self._state = state
        self._fill_rank_choice(state)
        self._show_notice(state)
        self._show_counts(state)
        self._show_selected()

    def follow(self, latest: Callable[[], KVEventsState] | None, interval_ms: int = 250) -> None:
        """Shows ``latest()`` (e.g. ``KVEventsSubscriber.latest``) on a GUI timer, a snapshot at a time;
        None stops. The subscriber's own thread never touches the widget."""
        self._latest = latest
        if latest is None:
            self._timer.stop()
            return
        self._timer.start(interval_ms)
        self.show_events_state(latest())

    def _on_timer_timeout(self) -> None:
        if self._latest is not None:
            self.show_events_state(self._latest())

    def selected_ranks(self) -> tuple[RankEventsState, ...]:
        if self._state is None:
            return ()
        chosen = self.rank_choice.currentData()
        if chosen is None or chosen == ALL_RANKS:
            return self._state.ranks
        return tuple(rank for rank in self._state.ranks if rank.rank == chosen)

    def _on_rank_choice_changed(self, _index: int) -> None:
        self._show_selected()

    def _fill_rank_choice(self, state: KVEventsState) -> None:
        wanted = [ALL_RANKS] + [rank.rank for rank in state.ranks] if len(state.ranks) > 1 else \
            [rank.rank for rank in state.ranks]
        have = [self.rank_choice.itemData(i) for i in range(self.rank_choice.count())]
        if have == wanted:
            return
        self.rank_choice.blockSignals(True)
        self.rank_choice.clear()
        for rank in wanted:
            self.rank_choice.addItem("all ranks, summed" if rank == ALL_RANKS else f"rank {rank}", rank)
        self.rank_choice.blockSignals(False)

    def _show_notice(self, state: KVEventsState) -> None:
        notices = state.notices()
        self.notice.setText("\n\n".join(notices))
        self.notice.setVisible(bool(notices))

    def _show_counts(self, state: KVEventsState) -> None:
        rows = [_count_row(rank) for rank in state.ranks]
        if len(state.ranks) > 1:
            rows.append(_sum_row(state))
        self.counts.setRowCount(len(rows))
        for row, values in enumerate(rows):
            for column, value in enumerate(values):
                item = QTableWidgetItem(value)
                if column > 1:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.counts.setItem(row, column, item)
        self.counts.resizeColumnsToContents()
        height = self.counts.horizontalHeader().height() + sum(self.counts.rowHeight(r) for r in range(len(rows)))
        self.counts.setFixedHeight(height + 2 * self.counts.frameWidth())

    def _show_selected(self) -> None:
        ranks = self.selected_ranks()
        self._show_chains(ranks)
        self._show_removals(ranks)

    def _show_chains(self, ranks: tuple[RankEventsState, ...]) -> None:
        # A chain the reader opened stays open through the next snapshot.
        expanded = {self.chains.topLevelItem(i).text(0) for i in range(self.chains.topLevelItemCount())
                    if self.chains.topLevelItem(i).isExpanded()}
        self.chains.clear()
        shown = total = 0
        items = []
        for rank in ranks:
            for chain in chains_of(rank.stored.values()):
                total += len(chain)
                if shown >= MAX_BLOCKS_SHOWN:
                    continue
                chain = chain[:MAX_BLOCKS_SHOWN - shown]
                shown += len(chain)
                items.append(_chain_item(chain, rank.rank))
        self.chains.addTopLevelItems(items)
        for item in items:
            item.setExpanded(item.text(0) in expanded)
        for column in range(self.chains.columnCount()):
            self.chains.resizeColumnToContents(column)
        num_chains = len(items)
        more = f"; the first {shown} shown" if shown < total else ""
        self.chains_caption.setText(f"Stored now: {total:,} blocks in {num_chains:,} chains "
                                    f"(a chain: blocks linked by their parent hash){more}")

    def _show_removals(self, ranks: tuple[RankEventsState, ...]) -> None:
        removed = sorted(((rank.rank, r) for rank in ranks for r in rank.recent_removals),
                         key=lambda pair: (-pair[1].ts, -pair[1].seq))
        self.removals.clear()
        self.removals.addItems([f"{hash_text(r.block_hash)}  rank {rank} seq {r.seq}  {r.medium or ''}"
                                for rank, r in removed[:64]])


def chains_of(blocks) -> list[list[StoredBlock]]:
    """Stored blocks grouped by chain: each chain starts at a block whose parent is not stored (the
    start of a prompt, or a parent since removed) and lists its descendants depth first. Longest first."""
    blocks = list(blocks)
    hashes = {block.block_hash for block in blocks}
    children: dict = defaultdict(list)
    roots = []
    for block in blocks:
        if block.parent_hash is None or block.parent_hash not in hashes:
            roots.append(block)
        else:
            children[block.parent_hash].append(block)
    chains = []
    for root in roots:
        chain, todo = [], [root]
        while todo:
            block = todo.pop()
            chain.append(block)
            todo.extend(reversed(children.pop(block.block_hash, [])))
        chains.append(chain)
    chains.sort(key=len, reverse=True)
    return chains


def _chain_item(chain: list[StoredBlock], rank: int) -> QTreeWidgetItem:
    root = chain[0]
    num_tokens = sum(len(block.token_ids) for block in chain)
    item = QTreeWidgetItem([f"chain {hash_text(root.block_hash)}", f"{len(chain)} blocks", f"{num_tokens:,}",
                            root.medium or "", str(rank), ""])
    item.addChildren([QTreeWidgetItem([hash_text(block.block_hash), hash_text(block.parent_hash),
                                       str(len(block.token_ids)), block.medium or "", str(rank), str(block.seq)])
                      for block in chain])
    return item


def _count_row(rank: RankEventsState) -> list[str]:
    caught_up = {None: "not yet", True: "yes", False: "no: gap"}[rank.caught_up]
    return [str(rank.rank), rank.link, f"{rank.num_stored_now:,}", f"{rank.num_blocks_stored:,}",
            f"{rank.num_blocks_removed:,}", f"{rank.num_clears:,}", f"{rank.num_restarts:,}",
            "—" if rank.last_seq is None else str(rank.last_seq), caught_up]


def _sum_row(state: KVEventsState) -> list[str]:
    return ["all", "", f"{state.num_stored_now:,}", f"{state.num_blocks_stored:,}",
            f"{state.num_blocks_removed:,}", f"{sum(r.num_clears for r in state.ranks):,}",
            f"{sum(r.num_restarts for r in state.ranks):,}", "",
            "yes" if state.complete else "no"]
