// Package session stores Dive agent sessions in agentsession.
package session
