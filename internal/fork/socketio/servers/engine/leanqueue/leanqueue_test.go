package leanqueue

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// Tasks run one at a time and in order, whether they come while the runner
// works, while it waits, or after it has ended.
func TestOrderAcrossLinger(t *testing.T) {
	q := New()
	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	add := func(i int) {
		wg.Add(1)
		q.Enqueue(func() {
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			wg.Done()
		})
	}
	n := 0
	for _, pause := range []time.Duration{0, time.Millisecond, Linger / 2, Linger, Linger + 20*time.Millisecond} {
		for range 100 {
			add(n)
			n++
		}
		wg.Wait()
		time.Sleep(pause)
	}
	if len(got) != n {
		t.Fatalf("%d tasks ran of %d", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("task %d ran as %d", v, i)
		}
	}
}

// Many goroutines enqueue at once, with the runner waiting, working and
// ending in between: every task runs exactly once, never two at a time.
func TestConcurrentEnqueue(t *testing.T) {
	q := New()
	var running, ran, overlap int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				q.Enqueue(func() {
					mu.Lock()
					running++
					if running > 1 {
						overlap++
					}
					mu.Unlock()
					mu.Lock()
					running--
					ran++
					mu.Unlock()
				})
				if i%50 == g {
					time.Sleep(Linger + time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		done := ran
		mu.Unlock()
		if done == 8*200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if ran != 8*200 || overlap != 0 {
		t.Fatalf("%d tasks ran of %d, %d while another ran", ran, 8*200, overlap)
	}
}

// An idle queue holds no goroutine once the linger is over, and TryClose
// ends a waiting runner at once.
func TestRunnerEnds(t *testing.T) {
	before := runtime.NumGoroutine()
	q := New()
	done := make(chan struct{})
	q.Enqueue(func() { close(done) })
	<-done
	waitGoroutines(t, before, 2*time.Second)

	q.Enqueue(func() {})
	q.TryClose()
	waitGoroutines(t, before, Linger/2)
	q.Enqueue(func() { t.Error("a task ran after TryClose") })
	time.Sleep(10 * time.Millisecond)
}

func waitGoroutines(t *testing.T, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after %s, want %d", runtime.NumGoroutine(), within, want)
		}
		time.Sleep(time.Millisecond)
	}
}
