package index

// WithoutRepair makes Open delete the newest file after an abnormal exit,
// as it did before repair: the broken variant of the repair tests, and the
// deletion path on its own.
func WithoutRepair(c Config) Config {
	c.noRepair = true
	return c
}
