package broker

// SetBeforeSuspend installs the hook that runs between a pull finding
// nothing and its registration in the hold table.
func (b *Broker) SetBeforeSuspend(f func()) { b.hooks.BeforeSuspend = f }

// FilterExpression returns the compiled SQL92 filter of group on topic
// ("" when there is none).
func (b *Broker) FilterExpression(topic, group string) string {
	if d := b.filters.get(topic, group); d != nil && d.compiled != nil {
		return d.compiled.String()
	}
	return ""
}
