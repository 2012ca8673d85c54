module github.com/rocketstore/rocketstore/console/browsertest

go 1.26.8

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/rocketstore/rocketstore v0.0.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/edsrzf/mmap-go v1.2.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/rocketstore/rocketstore => ../..
