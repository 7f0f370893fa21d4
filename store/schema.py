"""The database schema as an ordered list of migrations.

A migration is applied once, in order, and recorded in ``schema_migrations``; never edit one
that has shipped — add the next.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE incidents (
            id TEXT PRIMARY KEY, namespace TEXT NOT NULL, state TEXT NOT NULL,
            requested_by TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, data TEXT
        );
        CREATE TABLE proposals (
            id TEXT PRIMARY KEY, incident_id TEXT, action TEXT NOT NULL, target TEXT NOT NULL,
            state TEXT NOT NULL, plan TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
        );
        CREATE TABLE decisions (
            id INTEGER PRIMARY KEY AUTOINCREMENT, proposal_id TEXT NOT NULL,
            outcome TEXT NOT NULL, source TEXT NOT NULL, actor TEXT, reason TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE executions (
            id TEXT PRIMARY KEY, incident_id TEXT, transaction_id TEXT, proposal_id TEXT,
            action TEXT NOT NULL, operation TEXT NOT NULL, api_version TEXT NOT NULL,
            kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, actor TEXT NOT NULL,
            state TEXT NOT NULL, before_image TEXT, planned_after TEXT, before_rv TEXT,
            written_rv TEXT, diff TEXT, intent TEXT, error TEXT, inverse_of TEXT,
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL
        );
        CREATE INDEX executions_state ON executions(state);
        CREATE TABLE undo_entries (
            id TEXT PRIMARY KEY, execution_id TEXT NOT NULL UNIQUE REFERENCES executions(id),
            incident_id TEXT, transaction_id TEXT, seq INTEGER NOT NULL, state TEXT NOT NULL,
            created_at TEXT NOT NULL, undone_at TEXT, undone_by TEXT, last_error TEXT
        );
        CREATE INDEX undo_entries_state ON undo_entries(state, seq);
        CREATE TABLE grants (
            id TEXT PRIMARY KEY, action TEXT NOT NULL, namespace TEXT NOT NULL,
            resource TEXT NOT NULL, rule TEXT, created_by TEXT NOT NULL,
            created_at TEXT NOT NULL, expires_at TEXT NOT NULL, revoked_at TEXT,
            revoked_by TEXT
        );
        CREATE TABLE locks (
            resource TEXT PRIMARY KEY, holder TEXT NOT NULL, acquired_at REAL NOT NULL,
            expires_at REAL NOT NULL
        );
        CREATE TABLE audit_log (
            seq INTEGER PRIMARY KEY, at TEXT NOT NULL, actor TEXT NOT NULL,
            event TEXT NOT NULL, subject TEXT NOT NULL, payload TEXT NOT NULL,
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL
        );
        CREATE TABLE audit_head (
            id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, hash TEXT NOT NULL
        );
        CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
        CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
        """,
    ),
    (
        2,
        """
        ALTER TABLE proposals ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE proposals ADD COLUMN requester TEXT;
        ALTER TABLE proposals ADD COLUMN body TEXT;
        UPDATE proposals SET state = 'expired' WHERE body IS NULL AND state = 'awaiting_approval';
        CREATE INDEX proposals_state ON proposals(state, created_at);
        CREATE INDEX proposals_incident ON proposals(incident_id, created_at);
        ALTER TABLE executions ADD COLUMN owner TEXT;
        ALTER TABLE executions ADD COLUMN before_digest TEXT;
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, stream TEXT NOT NULL,
            subject TEXT NOT NULL, type TEXT NOT NULL, version INTEGER NOT NULL,
            payload TEXT NOT NULL
        );
        CREATE INDEX events_subject ON events(stream, subject, seq);
        CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'the event stream is append-only'); END;
        CREATE TRIGGER events_no_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'the event stream is append-only'); END;
        """,
    ),
    (
        3,
        """
        CREATE INDEX audit_log_execution ON audit_log(json_extract(payload, '$.execution'));
        """,
    ),
    (
        4,
        """
        ALTER TABLE incidents ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE incidents ADD COLUMN body TEXT;
        ALTER TABLE incidents ADD COLUMN open INTEGER NOT NULL DEFAULT 0;
        CREATE UNIQUE INDEX incidents_one_open_per_namespace ON incidents(namespace)
            WHERE open = 1;
        CREATE INDEX incidents_created ON incidents(created_at);
        """,
    ),
    (
        5,
        """
        CREATE TABLE alert_groups (
            group_key TEXT NOT NULL, namespace TEXT NOT NULL, incident_id TEXT,
            firing INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0,
            body TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
            PRIMARY KEY (group_key, namespace)
        );
        CREATE INDEX alert_groups_incident ON alert_groups(incident_id);
        """,
    ),
    (
        6,
        """
        ALTER TABLE grants ADD COLUMN mac TEXT;
        UPDATE grants SET revoked_at = strftime('%Y-%m-%dT%H:%M:%S+00:00', 'now'),
            revoked_by = 'stratus-upgrade' WHERE revoked_at IS NULL;
        CREATE INDEX audit_log_proposal ON audit_log(json_extract(payload, '$.proposal'));
        CREATE INDEX audit_log_grant ON audit_log(json_extract(payload, '$.grant'));
        UPDATE proposals SET state = 'expired',
            body = json_set(body, '$.state', 'expired', '$.reason', 'stored before seals')
            WHERE body IS NOT NULL AND json_extract(body, '$.seal') IS NULL
            AND state IN ('proposed', 'awaiting_approval', 'approved');
        """,
    ),
    (
        7,
        # What a grant is re-checked against while it lives (policies/evaluate.py): the
        # creator's user groups when they answered, and who had asked for the change.
        """
        ALTER TABLE grants ADD COLUMN creator_groups TEXT;
        ALTER TABLE grants ADD COLUMN requested_by TEXT;
        """,
    ),
    (
        8,
        """
        ALTER TABLE executions ADD COLUMN sent_at TEXT;
        UPDATE executions SET sent_at = updated_at WHERE state = 'pending';
        CREATE INDEX executions_object ON executions(kind, namespace, name, state);
        """,
    ),
    (
        9,
        # Events are sealed (``store.events``): surfaces render them, so an event inserted
        # or edited in the file must not be shown as something Stratus recorded.
        """
        ALTER TABLE events ADD COLUMN seal TEXT;
        """,
    ),
    (
        10,
        # Created by the first migration and never written: votes and policy decisions live
        # in the proposal's body, their history in events and the audit log.
        """
        DROP TABLE IF EXISTS decisions;
        """,
    ),
    (
        11,
        # The policy the bot serving this database enforces (``policies/served.py``): a
        # terminal opening the database runs under it, or refuses when told another one.
        """
        CREATE TABLE served_policy (
            id INTEGER PRIMARY KEY CHECK (id = 1), directory TEXT, files TEXT NOT NULL,
            digest TEXT NOT NULL, served_by TEXT NOT NULL, recorded_at TEXT NOT NULL
        );
        """,
    ),
    (
        12,
        # The bot's links (``bot.links``): which Slack message shows which incident or
        # proposal, parked threads, the stream cursor. The bot created them itself before;
        # IF NOT EXISTS keeps those databases as they are.
        """
        CREATE TABLE IF NOT EXISTS bot_threads (
            incident_id TEXT PRIMARY KEY, channel TEXT NOT NULL, ts TEXT NOT NULL,
            requester TEXT NOT NULL DEFAULT ''
        );
        CREATE UNIQUE INDEX IF NOT EXISTS bot_threads_ts ON bot_threads (channel, ts);
        CREATE TABLE IF NOT EXISTS bot_cards (
            proposal_id TEXT PRIMARY KEY, incident_id TEXT, channel TEXT NOT NULL,
            ts TEXT NOT NULL, thread_ts TEXT
        );
        CREATE TABLE IF NOT EXISTS bot_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS bot_parked (
            incident_id TEXT PRIMARY KEY, channel TEXT NOT NULL,
            requester TEXT NOT NULL DEFAULT ''
        );
        """,
    ),
    (
        13,
        # A fleet from one bot (docs/fleet.md): which cluster an incident, a proposal, a write
        # and its undo entry belong to (an audit row names it in its hashed payload, so the
        # chain covers it). '' is the default cluster — every row
        # written before there was more than one, so an upgraded database keeps acting on the
        # cluster it always did. One open incident per namespace *of a cluster*.
        """
        ALTER TABLE incidents ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
        ALTER TABLE proposals ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
        ALTER TABLE executions ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
        ALTER TABLE undo_entries ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
        ALTER TABLE grants ADD COLUMN cluster TEXT NOT NULL DEFAULT '';
        DROP INDEX IF EXISTS incidents_one_open_per_namespace;
        CREATE UNIQUE INDEX incidents_one_open_per_cluster_namespace
            ON incidents(cluster, namespace) WHERE open = 1;
        """,
    ),
]
