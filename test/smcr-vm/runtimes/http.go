// A Go program built with the standard library only (CGO_ENABLED=0: static, Go's own resolver and
// its runtime's socket calls, which always pass SOCK_NONBLOCK|SOCK_CLOEXEC), as Go services are
// shipped. `serve PORT` answers GET /bytes/N with N bytes; `get URL` fetches it reading slowly (64
// KiB every 60 ms), so that the connection stays open while the test lists it, and prints
// "got N bytes". `stop ADDR PORT` serves one request, then stops gracefully (http.Server.Shutdown:
// the listener closed, idle connections closed) and prints "stopped=yes ms=N" (#88: what SMC's
// listener changes for a server's stop). The test VM (test/smcr-vm/transparent.sh) builds it with
// Debian's golang-go.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func serve(port string) error {
	http.HandleFunc("/bytes/", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/bytes/"))
		if err != nil || n < 0 {
			http.Error(w, "bad size", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		chunk := make([]byte, 65536)
		for n > 0 {
			k := len(chunk)
			if n < k {
				k = n
			}
			if _, err := w.Write(chunk[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	return http.ListenAndServe(":"+port, nil)
}

func get(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := make([]byte, 65536)
	total := 0
	for {
		n, err := io.ReadFull(resp.Body, buf)
		total += n
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
		time.Sleep(60 * time.Millisecond)
	}
	fmt.Printf("got %d bytes\n", total)
	return nil
}

func stop(addr, port string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, port))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// One request on a kept-alive connection: Shutdown has an idle connection to close too.
	resp, err := http.Get("http://" + net.JoinHostPort(addr, port) + "/")
	if err != nil {
		return err
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return err
	}
	if err := <-served; err != http.ErrServerClosed {
		return fmt.Errorf("Serve returned %v", err)
	}
	fmt.Printf("stopped=yes ms=%d\n", time.Since(t0).Milliseconds())
	return nil
}

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "serve":
		err = serve(os.Args[2])
	case len(os.Args) == 3 && os.Args[1] == "get":
		err = get(os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "stop":
		err = stop(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("usage: go-http serve PORT | get URL | stop ADDR PORT")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
