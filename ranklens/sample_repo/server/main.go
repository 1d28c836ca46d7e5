package main

import "fmt"

// RateLimiter limits how many requests a client may send per second.
type RateLimiter struct {
	limit int
	seen  map[string]int
}

// Allow reports whether the client may send another request.
func (r *RateLimiter) Allow(client string) bool {
	r.seen[client]++
	return r.seen[client] <= r.limit
}

func main() {
	limiter := &RateLimiter{limit: 10, seen: map[string]int{}}
	fmt.Println(limiter.Allow("127.0.0.1"))
}
