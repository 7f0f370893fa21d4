"""The undo stack: before-images, inverse operations, conflict detection, transactions."""
