package offload

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// The test binary doubles as a second process for the store tests: with
// OFFLOAD_CHILD set, TestMain runs one child and exits.
//
//	OFFLOAD_CHILD=put    store OFFLOAD_N payloads of writer OFFLOAD_WRITER
//	                     (every third one shared by all writers), then exit
//	OFFLOAD_CHILD=hang   store one payload of OFFLOAD_SIZE bytes (pending with
//	                     OFFLOAD_PENDING set), then confirm it; at stage
//	                     OFFLOAD_STAGE print "at <stage>" and wait to be killed
//	OFFLOAD_CHILD=loop   store payloads of OFFLOAD_SIZE bytes until killed
//	OFFLOAD_CHILD=outage tool results while files cannot grow (outageChild)
func TestMain(m *testing.M) {
	if mode := os.Getenv("OFFLOAD_CHILD"); mode != "" {
		if err := child(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	flag.Parse()
	os.Exit(m.Run())
}

// payload is deterministic content for writer w, item n.
func payload(w, n, size int) []byte {
	b := make([]byte, 0, size)
	line := 0
	for len(b) < size {
		b = fmt.Appendf(b, "writer %d item %d line %d: the quick brown fox\n", w, n, line)
		line++
	}
	return b[:size]
}

func child(mode string) error {
	if mode == "outage" {
		return outageChild()
	}
	atoi := func(k string) int { n, _ := strconv.Atoi(os.Getenv(k)); return n }
	if v := os.Getenv("OFFLOAD_COMPACT_SLACK"); v != "" {
		compactSlack = atoi("OFFLOAD_COMPACT_SLACK")
	}
	s, err := OpenStore(os.Getenv("OFFLOAD_STORE"), time.Now)
	if err != nil {
		return err
	}
	defer s.Close()
	lim := Limits{MaxBytes: 500_000_000, TTL: time.Hour}
	switch mode {
	case "put":
		w := atoi("OFFLOAD_WRITER")
		for n := 0; n < atoi("OFFLOAD_N"); n++ {
			data := payload(w, n, 2000+n*37)
			if n%3 == 0 {
				data = payload(-1, n, 3000) // the same in every writer
			}
			if _, _, err := s.Put(data, Meta{Kind: "text", Source: "child"}, lim); err != nil {
				return err
			}
		}
	case "hang":
		stage := os.Getenv("OFFLOAD_STAGE")
		out := bufio.NewWriter(os.Stdout)
		storeHook = func(at string) {
			if at == stage {
				fmt.Fprintf(out, "at %s\n", at)
				out.Flush()
				time.Sleep(time.Hour) // until killed (select{} would be a detected deadlock)
			}
		}
		data := payload(7, 7, atoi("OFFLOAD_SIZE"))
		pending := os.Getenv("OFFLOAD_PENDING") != ""
		e, _, err := s.PutStream(func(w io.Writer) error {
			if _, err := w.Write(data[:len(data)/2]); err != nil {
				return err
			}
			if f, ok := w.(interface{ Flush() error }); ok {
				f.Flush()
			}
			storeHook("half")
			_, err := w.Write(data[len(data)/2:])
			return err
		}, Meta{Kind: "text", Pending: pending}, lim)
		if err != nil {
			return err
		}
		storeHook("stored")
		if err := s.Confirm(e.Handle); err != nil {
			return err
		}
		storeHook("confirmed")
		return nil
	case "loop":
		size := atoi("OFFLOAD_SIZE")
		fmt.Println("started")
		for n := 0; ; n++ {
			if _, _, err := s.Put(payload(9, n, size), Meta{Kind: "text"}, lim); err != nil {
				return err
			}
		}
	}
	return nil
}
