// A Go program built with the standard library only (CGO_ENABLED=0: static, Go's own resolver and
// its runtime's socket calls, which always pass SOCK_NONBLOCK|SOCK_CLOEXEC), as Go services are
// shipped. `serve PORT` answers GET /bytes/N with N bytes; `get URL` fetches it reading slowly (64
// KiB every 60 ms), so that the connection stays open while the test lists it, and prints
// "got N bytes". The test VM (test/smcr-vm/transparent.sh) builds it with Debian's golang-go.
package main

import (
	"fmt"
	"io"
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

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "serve":
		err = serve(os.Args[2])
	case len(os.Args) == 3 && os.Args[1] == "get":
		err = get(os.Args[2])
	default:
		err = fmt.Errorf("usage: go-http serve PORT | get URL")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
