package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/osc-assistant/assistant/knowledge"
)

// The lease of a sync job (knowledge.md §6.1): one run per community and type at a time,
// across replicas. Always an exclusive flock on knowledge/<id>.<type>.lock in the data
// directory (FileLeaser), which holds between processes sharing that directory (a server and
// an assistant sync beside it, with or without Redis) and between two runs in one process
// (each take opens the file anew, and flock locks belong to the open file); with Redis, also a
// key set if absent with a TTL the holder renews (RedisLeaser, backed by the store package),
// for the replicas on other machines (NewLeaser).
//
// The Redis lease assumes the replicas share one data directory: the replica that holds it
// syncs the database they all read, and the others skip the run. Replicas with data
// directories of their own would each serve a database only their own runs update.

// LeaseTTL is how long a Redis lease lives unless renewed; LeaseRenewal how often the runner
// renews it.
const (
	LeaseTTL     = 10 * time.Minute
	LeaseRenewal = 2 * time.Minute
)

// ErrLeaseHeld is returned by Acquire when another run (here or on another replica) holds the
// job's lease.
var ErrLeaseHeld = errors.New("another run holds the sync lease")

// ErrLeaseLost is returned by Renew when the lease is no longer this run's (it expired, and
// perhaps another replica took it).
var ErrLeaseLost = errors.New("the sync lease was lost")

// A Leaser hands out the leases of sync jobs.
type Leaser interface {
	// Acquire takes the lease of (community, syncType), or returns ErrLeaseHeld.
	Acquire(ctx context.Context, community, syncType string) (Lease, error)
}

// A Lease is one taken lease.
type Lease interface {
	// Renew extends it; an error wrapping ErrLeaseLost when it is no longer held.
	Renew(ctx context.Context) error
	// Release gives it up. It is safe to call once after any Renew result.
	Release(ctx context.Context) error
}

// LeaseName is a job's lease name in Redis, after the store's key prefix: with the default
// prefix the key is the spec's assistant:sync:{community}:{type}.
func LeaseName(community, syncType string) string { return "sync:" + community + ":" + syncType }

// RedisLeases is what RedisLeaser needs of the store (*store.Redis has it).
type RedisLeases interface {
	AcquireLease(ctx context.Context, name string, ttl time.Duration) (token string, ok bool, err error)
	RenewLease(ctx context.Context, name, token string, ttl time.Duration) (held bool, err error)
	ReleaseLease(ctx context.Context, name, token string) (released bool, err error)
}

// RedisLeaser takes leases in Redis, with LeaseTTL.
type RedisLeaser struct {
	Store RedisLeases
	// TTL overrides LeaseTTL (tests).
	TTL time.Duration
}

func (l *RedisLeaser) ttl() time.Duration {
	if l.TTL > 0 {
		return l.TTL
	}
	return LeaseTTL
}

// Acquire implements Leaser.
func (l *RedisLeaser) Acquire(ctx context.Context, community, syncType string) (Lease, error) {
	name := LeaseName(community, syncType)
	token, ok, err := l.Store.AcquireLease(ctx, name, l.ttl())
	if err != nil {
		return nil, fmt.Errorf("taking the sync lease %s: %w", name, err)
	}
	if !ok {
		return nil, ErrLeaseHeld
	}
	return &redisLease{l: l, name: name, token: token}, nil
}

type redisLease struct {
	l           *RedisLeaser
	name, token string
}

func (r *redisLease) Renew(ctx context.Context) error {
	held, err := r.l.Store.RenewLease(ctx, r.name, r.token, r.l.ttl())
	if err != nil {
		return fmt.Errorf("renewing the sync lease %s: %w", r.name, err)
	}
	if !held {
		return fmt.Errorf("renewing the sync lease %s: %w", r.name, ErrLeaseLost)
	}
	return nil
}

func (r *redisLease) Release(ctx context.Context) error {
	if _, err := r.l.Store.ReleaseLease(ctx, r.name, r.token); err != nil {
		return fmt.Errorf("releasing the sync lease %s: %w", r.name, err)
	}
	return nil
}

// NewLeaser returns the leases of a server or an assistant sync on the data directory whose
// knowledge directory is dir: the flock on dir/<id>.<type>.lock always, and with redis (nil:
// none) the Redis lease as well, so a process with Redis and one without, on one data
// directory, still exclude each other. The flock is taken first: a run that another process
// here holds is refused without asking Redis, and a Redis lease held elsewhere gives the
// flock back.
func NewLeaser(dir string, redis RedisLeases) Leaser {
	file := &FileLeaser{Dir: dir}
	if redis == nil {
		return file
	}
	return &bothLeaser{file: file, redis: &RedisLeaser{Store: redis}}
}

// bothLeaser takes the flock, then the Redis lease.
type bothLeaser struct {
	file  *FileLeaser
	redis *RedisLeaser
}

func (b *bothLeaser) Acquire(ctx context.Context, community, syncType string) (Lease, error) {
	fl, err := b.file.Acquire(ctx, community, syncType)
	if err != nil {
		return nil, err
	}
	rl, err := b.redis.Acquire(ctx, community, syncType)
	if err != nil {
		fl.Release(ctx)
		return nil, err
	}
	return &bothLease{file: fl, redis: rl}, nil
}

type bothLease struct{ file, redis Lease }

// Renew renews the Redis lease (the flock holds by itself).
func (l *bothLease) Renew(ctx context.Context) error { return l.redis.Renew(ctx) }

// Release gives up the Redis lease, then the flock (which never fails to go).
func (l *bothLease) Release(ctx context.Context) error {
	return errors.Join(l.redis.Release(ctx), l.file.Release(ctx))
}

// FileLeaser takes leases as exclusive flocks on Dir/<id>.<type>.lock; Dir is the knowledge
// directory (<data>/knowledge). A lock dies with its process, so no TTL is needed.
type FileLeaser struct {
	Dir string
}

// Acquire implements Leaser.
func (l *FileLeaser) Acquire(_ context.Context, community, syncType string) (Lease, error) {
	if !knowledge.ValidID(community) || !knowledge.ValidID(syncType) {
		return nil, fmt.Errorf("sync lease of %q, %q: %w", community, syncType, knowledge.ErrInvalidID)
	}
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sync lease: %w", err)
	}
	path := filepath.Join(l.Dir, community+"."+syncType+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sync lease: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLeaseHeld
		}
		return nil, fmt.Errorf("sync lease %s: %w", path, err)
	}
	return &fileLease{f: f}, nil
}

type fileLease struct{ f *os.File }

// Renew has nothing to do: the lock holds until it is released or the process ends.
func (*fileLease) Renew(context.Context) error { return nil }

// Release unlocks by closing the file (the lock goes with its last descriptor). The file is
// left in place: removing it could let two takers lock two different files of one name.
func (l *fileLease) Release(context.Context) error { return l.f.Close() }
