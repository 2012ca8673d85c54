package remoting

import (
	"fmt"
	"strconv"
	"strings"
)

// This file reads and writes typed values in ExtFields, RocketMQ's custom
// header, where every value travels as a string.

// SetExt sets the extFields entry name to value, allocating the map if needed.
func (c *RemotingCommand) SetExt(name, value string) {
	if c.ExtFields == nil && c.lean {
		c.setLeanExt(name, value)
		return
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string)
	}
	c.ExtFields[name] = value
}

// SetExtInt sets the extFields entry name to v in decimal.
func (c *RemotingCommand) SetExtInt(name string, v int64) {
	c.SetExt(name, strconv.FormatInt(v, 10))
}

// SetExtBool sets the extFields entry name to "true" or "false".
func (c *RemotingCommand) SetExtBool(name string, v bool) {
	c.SetExt(name, strconv.FormatBool(v))
}

// ExtString returns the extFields entry name, or an error wrapping
// ErrMissingField when it is absent.
func (c *RemotingCommand) ExtString(name string) (string, error) {
	v, ok := c.Ext(name)
	if !ok {
		return "", fmt.Errorf("%w: %q (request code %d)", ErrMissingField, name, c.Code)
	}
	return v, nil
}

// ExtInt32 parses the extFields entry name as a decimal int32.
func (c *RemotingCommand) ExtInt32(name string) (int32, error) {
	v, err := c.extInt(name, 32)
	return int32(v), err
}

// ExtInt64 parses the extFields entry name as a decimal int64.
func (c *RemotingCommand) ExtInt64(name string) (int64, error) {
	return c.extInt(name, 64)
}

func (c *RemotingCommand) extInt(name string, bits int) (int64, error) {
	s, err := c.ExtString(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: %q = %q is not an int%d (request code %d)", ErrBadField, name, s, bits, c.Code)
	}
	return v, nil
}

// ExtBool parses the extFields entry name as a boolean: "true" or "false"
// in any case, "1" or "0".
func (c *RemotingCommand) ExtBool(name string) (bool, error) {
	s, err := c.ExtString(name)
	if err != nil {
		return false, err
	}
	v, err := strconv.ParseBool(strings.ToLower(s))
	if err != nil {
		return false, fmt.Errorf("%w: %q = %q is not a bool (request code %d)", ErrBadField, name, s, c.Code)
	}
	return v, nil
}

// Fields returns a reader of c's extFields that remembers its first error,
// so a handler can read a dozen fields and check once:
//
//	f := req.Fields()
//	topic, qid := f.String("topic"), f.Int32("queueId")
//	commit := f.OptInt64("commitOffset", -1)
//	if err := f.Err(); err != nil { ... }
func (c *RemotingCommand) Fields() *FieldReader { return &FieldReader{cmd: c} }

// FieldReader reads typed extFields entries and keeps the first error; after
// an error its methods return zero values (or the defaults).
type FieldReader struct {
	cmd *RemotingCommand
	err error
}

// Err returns the first error met, wrapping ErrMissingField or ErrBadField.
func (f *FieldReader) Err() error { return f.err }

func (f *FieldReader) keep(err error) {
	if f.err == nil {
		f.err = err
	}
}

func (f *FieldReader) has(name string) bool {
	_, ok := f.cmd.Ext(name)
	return ok
}

// String returns the required entry name.
func (f *FieldReader) String(name string) string {
	v, err := f.cmd.ExtString(name)
	f.keep(err)
	return v
}

// Int32 returns the required entry name as an int32.
func (f *FieldReader) Int32(name string) int32 {
	v, err := f.cmd.ExtInt32(name)
	f.keep(err)
	return v
}

// Int64 returns the required entry name as an int64.
func (f *FieldReader) Int64(name string) int64 {
	v, err := f.cmd.ExtInt64(name)
	f.keep(err)
	return v
}

// Bool returns the required entry name as a bool.
func (f *FieldReader) Bool(name string) bool {
	v, err := f.cmd.ExtBool(name)
	f.keep(err)
	return v
}

// OptString returns the entry name, or def when it is absent.
func (f *FieldReader) OptString(name, def string) string {
	if !f.has(name) {
		return def
	}
	return f.String(name)
}

// OptInt32 returns the entry name as an int32, or def when it is absent.
func (f *FieldReader) OptInt32(name string, def int32) int32 {
	if !f.has(name) {
		return def
	}
	return f.Int32(name)
}

// OptInt64 returns the entry name as an int64, or def when it is absent.
func (f *FieldReader) OptInt64(name string, def int64) int64 {
	if !f.has(name) {
		return def
	}
	return f.Int64(name)
}

// OptBool returns the entry name as a bool, or def when it is absent.
func (f *FieldReader) OptBool(name string, def bool) bool {
	if !f.has(name) {
		return def
	}
	return f.Bool(name)
}
