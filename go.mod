module github.com/rocketstore/rocketstore

go 1.26.8

require (
	github.com/edsrzf/mmap-go v1.2.0
	github.com/spf13/afero v1.15.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
)

require golang.org/x/text v0.28.0 // indirect
