// Package verify checks a rocketstore directory offline, independently of
// the engine that wrote it: it reads the files through a backend.FS and
// decodes records with package record, so that a bug in the engine's own
// recovery or dispatch code cannot hide itself.
//
// What Run checks, in RocketMQ 4.x terms:
//
//   - CommitLog files: 20-digit names, equal sizes, contiguous offsets.
//   - CommitLog records: valid magic, TOTALSIZE matching the fields, BODYCRC,
//     PHYSICALOFFSET equal to the record's position, store timestamps that
//     never go backwards; BLANK records only where they end a file; zero
//     bytes only after the end of the data.
//   - ConsumeQueues (consumequeue/{topic}/{queueId}/): the same file rules,
//     and every 20-byte unit pointing at a record of the same topic and
//     queue whose queue offset is the unit's index, with the record's size
//     and tagsCode; no unit after the end of a queue's data, no two units for
//     one record.
//   - Every dispatchable record (not a prepared or rolled-back transaction)
//     present in its queue at its queue offset.
//   - The checkpoint: three timestamps, none negative, none ahead of the last
//     record's store time by more than a margin.
//
// Run reports violations with the file and byte offset they were found at;
// it returns an error only when it cannot read the store at all.
//
// A store that was not closed cleanly (the abort marker is present) may
// legitimately have a torn tail and ConsumeQueues lagging the CommitLog
// until it is opened once: the report says so, and still lists them.
//
// Run only reads. It takes the store's lock while it runs (when a lock file
// exists) so that it never checks files that a live store is writing.
package verify
