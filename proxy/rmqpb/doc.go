// Package rmqpb is the Go code generated from RocketMQ 5.x's protocol
// definitions (apache.rocketmq.v2: definition.proto, service.proto and
// admin.proto under proto/, as shipped in the npm package
// rocketmq-client-nodejs 1.0.8). Do not edit the .pb.go files: change the
// generator pins and run `go generate ./proxy/rmqpb`.
//
// Generators (pinned; the files record them and CI checks that
// regeneration is byte-identical): protoc 3.21.12, protoc-gen-go v1.36.12
// (google.golang.org/protobuf/cmd/protoc-gen-go) and protoc-gen-go-grpc
// v1.6.1 (google.golang.org/grpc/cmd/protoc-gen-go-grpc).
package rmqpb

//go:generate protoc -I proto --go_out=. --go_opt=module=github.com/rocketstore/rocketstore/proxy/rmqpb --go_opt=Mapache/rocketmq/v2/definition.proto=github.com/rocketstore/rocketstore/proxy/rmqpb --go_opt=Mapache/rocketmq/v2/service.proto=github.com/rocketstore/rocketstore/proxy/rmqpb --go_opt=Mapache/rocketmq/v2/admin.proto=github.com/rocketstore/rocketstore/proxy/rmqpb --go-grpc_out=. --go-grpc_opt=module=github.com/rocketstore/rocketstore/proxy/rmqpb --go-grpc_opt=Mapache/rocketmq/v2/definition.proto=github.com/rocketstore/rocketstore/proxy/rmqpb --go-grpc_opt=Mapache/rocketmq/v2/service.proto=github.com/rocketstore/rocketstore/proxy/rmqpb --go-grpc_opt=Mapache/rocketmq/v2/admin.proto=github.com/rocketstore/rocketstore/proxy/rmqpb apache/rocketmq/v2/definition.proto apache/rocketmq/v2/service.proto apache/rocketmq/v2/admin.proto
