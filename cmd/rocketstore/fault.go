package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// faultsAsErrors runs fn, an offline tool's work on mapped store files, and
// turns a memory fault on a mapped page into an error: a read of a page
// the kernel cannot provide (a hole in a sparse file on a full file
// system, a file truncated under the mapping, an I/O error) raises SIGBUS,
// which Go otherwise reports as a fatal "unexpected fault address". The
// tools do their reading in the calling goroutine, the one this covers.
func faultsAsErrors(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		_, ok := r.(runtime.Error)
		addr, hasAddr := r.(interface{ Addr() uintptr })
		if !ok || !hasAddr {
			panic(r)
		}
		err = fmt.Errorf("reading a mapped store file failed at address %#x (SIGBUS): a page of the file cannot be read "+
			"(a sparse file on a full file system, a file truncated while in use, or an I/O error); "+
			"check the file system and `df`, or copy the store without --sparse", addr.Addr())
	}()
	return fn()
}
