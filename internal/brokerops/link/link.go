// Package link carries the broker's internal operations to package
// brokerops without an import cycle: the broker imports this leaf and
// registers them at init; brokerops imports the broker and calls them.
// Nothing else should use this package.
package link

// Abandon stops a *broker.Broker (the argument) as a killed process
// would; the broker sets it at init.
var Abandon func(broker any)
