"""SQLite persistence through sqlite-utils: schema, migrations, the audit log."""
