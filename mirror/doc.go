// Package mirror keeps a session's copies on two stores the same: a
// local one (a FileStore on the machine the agent runs on) and a remote
// one (s3store on a bucket, pgstore on a server), so that a session
// saved on one machine is picked up on another, and nothing either side
// wrote is lost when both did.
//
// Sync brings one session's two copies to the same log, once; Run does
// it continuously for a host, beside its agent, until its context ends.
// The command `agentsession mirror` does both from the shell.
//
// When both copies were written since they last agreed (two machines
// continued one session while apart), the remote's compare-and-set
// refuses the local side's append, and Sync makes the local side's
// turns a branch of the remote copy, leaving the remote's current leaf
// where it was; the local copy then takes the remote's log. Every entry
// of both sides is in the result, reachable in the session's tree
// (Session.Tree, Session.Branch).
//
// It imports the session package only.
package mirror
