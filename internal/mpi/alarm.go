package mpi

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"time"
)

// The alarm: a rank whose collective timed out tells every other rank, which then writes its
// own hang report before the job is torn down (MPI_Abort ends every rank at once, MPICH's
// included). The tags lie above every arrival tag (arrivalTag).
const (
	alarmTag = 32767
	ackTag   = 32766
)

// alarmPoll is how often a rank waiting in a collective looks for an alarm: a collective waits
// in slices of this length.
const alarmPoll = 500 * time.Millisecond

// alarmWait is how long a rank that timed out waits for the others' acknowledgements (each
// wrote its report) before its error returns and the job is aborted.
const alarmWait = 2 * alarmPoll

// armAlarms posts, once, a receive for an alarm from every other rank (in jobs of at most
// c.trackAll ranks). MPI thread only.
func (c *Comm) armAlarms() {
	if c.alarmsArmed || c.size == 1 || c.size > c.trackAll {
		return
	}
	c.alarmsArmed = true
	for p := 0; p < c.size; p++ {
		if p == c.rank {
			continue
		}
		var req C.gs_handle
		if C.gs_irecv0(C.int(p), alarmTag, c.comm, &req) != 0 {
			continue // no alarm from p: its report is then not asked for
		}
		c.alarms = append(c.alarms, req)
		c.alarmFrom = append(c.alarmFrom, p)
	}
	c.alarmDone = make([]C.int, len(c.alarms))
}

// answerAlarms tests the alarm receives: for each alarm that came, it writes this rank's hang
// report and acknowledges it. MPI thread only.
func (c *Comm) answerAlarms() {
	for i := range c.alarms {
		if c.alarmDone[i] != 0 {
			continue
		}
		var failed C.int
		if rc := C.gs_wait(&c.alarms[i], &c.alarmDone[i], 1, 0, 0, 0, &failed); rc != 0 || c.alarmDone[i] == 0 {
			continue
		}
		from := c.alarmFrom[i]
		_, _ = c.WriteHangReport(fmt.Sprintf("rank %d timed out in a collective and asked every rank for its report", from))
		var req C.gs_handle
		if C.gs_isend0(C.int(from), ackTag, c.comm, &req) == 0 {
			c.acks = append(c.acks, req) // left in flight until disarm: the job is ending
		}
	}
}

// soundAlarm, after this rank's collective timed out, asks every other rank for its hang
// report and waits up to alarmWait for their acknowledgements (a rank that is not in a
// collective does not answer). MPI thread only.
func (c *Comm) soundAlarm() {
	if !c.alarmsArmed || len(c.alarms) == 0 {
		return
	}
	var reqs []C.gs_handle
	for _, p := range c.alarmFrom {
		var s, r C.gs_handle
		if C.gs_isend0(C.int(p), alarmTag, c.comm, &s) == 0 {
			reqs = append(reqs, s)
		}
		if C.gs_irecv0(C.int(p), ackTag, c.comm, &r) == 0 {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		return
	}
	done := make([]C.int, len(reqs))
	var failed C.int
	_ = C.gs_wait(&reqs[0], &done[0], C.int(len(reqs)), 0, 0, C.double(alarmWait.Seconds()), &failed)
}

// disarm cancels the alarm receives still posted and the acknowledgements still in flight,
// and frees them, so that MPI_Finalize finds none of this package's requests pending (UCX
// reports each one left "not returned to mpool ucp_requests"). MPI thread only, before
// MPI_Finalize.
func (c *Comm) disarm() {
	var reqs []C.gs_handle
	for i, r := range c.alarms {
		if c.alarmDone[i] == 0 {
			reqs = append(reqs, r)
		}
	}
	reqs = append(reqs, c.acks...)
	c.alarms, c.alarmFrom, c.alarmDone, c.acks = nil, nil, nil, nil
	if len(reqs) > 0 {
		_ = C.gs_cancel(&reqs[0], C.int(len(reqs)), C.double(alarmWait.Seconds()))
	}
}
