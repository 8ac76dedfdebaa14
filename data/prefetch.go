package data

import (
	"fmt"
	"iter"
	"sync"
)

// job builds one global batch; jobs run on worker goroutines.
type job func() (*GlobalBatch, error)

// ordered runs the jobs that produce emits on workers goroutines and yields their global
// batches in the order the jobs were emitted, keeping at most 2*workers ready ahead of the
// consumer.
// produce runs on its own goroutine (it may read a file); with workers <= 0 everything runs on
// the caller's goroutine. Panics in produce or in a job become errors. Stopping the iteration
// early stops produce and the workers before ordered returns.
func ordered(produce func(emit func(job) bool) error, workers int) iter.Seq2[*GlobalBatch, error] {
	return func(yield func(*GlobalBatch, error) bool) {
		if workers <= 0 {
			stopped := false
			err := safeProduce(produce, func(j job) bool {
				s, err := safeJob(j)
				if err != nil || !yield(s, nil) {
					if err != nil {
						yield(nil, err)
					}
					stopped = true
					return false
				}
				return true
			})
			if err != nil && !stopped {
				yield(nil, err)
			}
			return
		}

		type result struct {
			batch *GlobalBatch
			err   error
		}
		type task struct {
			run job
			out chan result
		}
		done := make(chan struct{})
		tasks := make(chan task)
		queue := make(chan chan result, 2*workers) // results in emission order
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for t := range tasks {
					s, err := safeJob(t.run)
					t.out <- result{s, err} // buffered: never blocks
				}
			})
		}
		wg.Go(func() {
			defer close(queue)
			defer close(tasks)
			err := safeProduce(produce, func(j job) bool {
				out := make(chan result, 1)
				select {
				case tasks <- task{j, out}:
				case <-done:
					return false
				}
				select {
				case queue <- out:
					return true
				case <-done:
					return false
				}
			})
			if err != nil {
				out := make(chan result, 1)
				out <- result{nil, err}
				select {
				case queue <- out:
				case <-done:
				}
			}
		})
		defer func() {
			close(done)
			wg.Wait()
		}()
		for out := range queue {
			r := <-out
			if r.err != nil {
				yield(nil, r.err)
				return
			}
			if !yield(r.batch, nil) {
				return
			}
		}
	}
}

func safeJob(j job) (s *GlobalBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("data: panic while building a global batch: %v", p)
		}
	}()
	return j()
}

func safeProduce(produce func(emit func(job) bool) error, emit func(job) bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("data: panic while reading the dataset: %v", p)
		}
	}()
	return produce(emit)
}
