// Package configfile reads and writes the broker's small JSON files
// (config/topics.json, subscriptionGroup.json, consumerOffset.json,
// delayOffset.json) the way our choices table says:
//
//   - Load accepts RocketMQ's fastjson output, whose maps with integer keys
//     are written with bare keys ({0:250,1:248}); it quotes them before
//     handing the text to encoding/json.
//   - Load falls back to name.bak when name is missing, empty or corrupt.
//     When both are unusable but something exists, it returns an error
//     wrapping ErrCorrupt rather than starting empty, so that a later save
//     never overwrites the only copy of the data.
//   - Save writes standard JSON crash-safely with backend.WriteFileAtomic
//     (tmp, sync, keep .bak, rename, sync dir).
//
// Concurrency: the functions are stateless; callers serialise saves of one
// file.
package configfile
