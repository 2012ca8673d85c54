package broker

// SetBeforeSuspend installs the hook that runs between a pull finding
// nothing and its registration in the hold table.
func (b *Broker) SetBeforeSuspend(f func()) { b.hooks.BeforeSuspend = f }
