-- A b-tree index entry cannot exceed 2704 bytes, so with a b-tree on "handle" a bike whose
-- title (and so handle) is a few kilobytes of text could not be stored at all. A hash index
-- stores a 4-byte hash of the value: any handle fits, and get-by-handle is still one index
-- lookup (the few rows sharing a handle are then ordered by "seq").

-- DropIndex
DROP INDEX "bikes_handle_seq_idx";

-- CreateIndex
CREATE INDEX "bikes_handle_idx" ON "bikes" USING HASH ("handle");
