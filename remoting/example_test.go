package remoting_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/remoting"
)

// A broker registers one handler per request code, answers some requests at
// once and holds others (long polling) to answer later on the same
// connection with the original opaque.
func Example() {
	mux := remoting.NewMux()
	mux.RegisterFunc(remoting.CodeGetMaxOffset, func(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		f := req.Fields()
		topic, qid := f.String("topic"), f.Int32("queueId")
		if err := f.Err(); err != nil {
			return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
		}
		resp := req.NewResponse(remoting.CodeSuccess, "")
		resp.SetExtInt("offset", int64(len(topic))+int64(qid))
		return resp, nil
	})
	mux.RegisterFunc(remoting.CodePullMessage, func(_ context.Context, conn *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		go func() { // e.g. woken when a message arrives
			_ = conn.WriteResponse(req.NewResponse(remoting.CodePullNotFound, "no new message"))
		}()
		return nil, nil // answered later
	})

	srv, err := remoting.NewServer(mux, remoting.Options{})
	if err != nil {
		panic(err)
	}
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, addr.String(), remoting.ClientOptions{})
	if err != nil {
		panic(err)
	}
	defer cl.Close()

	req := remoting.NewRequest(remoting.CodeGetMaxOffset, nil)
	req.SetExt("topic", "T")
	req.SetExtInt("queueId", 2)
	resp, err := cl.Invoke(ctx, req)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Code, resp.ExtFields["offset"])

	resp, err = cl.Invoke(ctx, remoting.NewRequest(remoting.CodePullMessage, nil))
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Code, resp.Remark)
	// Output:
	// 0 3
	// 19 no new message
}
