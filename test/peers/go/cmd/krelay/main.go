// krelay is the benchmarks' reference TCP relay: it accepts connections on -listen and copies
// bytes both ways to -upstream, nothing else. Go's io.Copy between two TCP connections uses
// splice(2) on Linux, so the bytes never enter user space: what this relay costs is what any
// relay terminating TCP must pay, the floor a Kafka proxy is measured against.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to accept clients on")
	upstream := flag.String("upstream", "", "address to relay each connection to")
	flag.Parse()
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "krelay: -upstream HOST:PORT is required")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("krelay: listen on %s: %v", *listen, err)
	}
	// The harness waits for this line before sending traffic.
	fmt.Printf("listening %s\n", ln.Addr())
	for {
		client, err := ln.Accept()
		if err != nil {
			log.Fatalf("krelay: accept: %v", err)
		}
		go relay(client.(*net.TCPConn), *upstream)
	}
}

func relay(client *net.TCPConn, upstream string) {
	defer client.Close()
	conn, err := net.Dial("tcp", upstream)
	if err != nil {
		log.Printf("krelay: dial %s: %v", upstream, err)
		return
	}
	server := conn.(*net.TCPConn)
	defer server.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src *net.TCPConn) {
		io.Copy(dst, src)
		dst.CloseWrite()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}
