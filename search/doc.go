// Package search indexes the text of a store's sessions for full-text search.
package search
