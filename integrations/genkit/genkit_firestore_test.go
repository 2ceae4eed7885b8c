// Copyright 2025 Google LLC
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.
//
// SPDX-License-Identifier: Apache-2.0

// Ported from github.com/firebase/genkit/go v1.4.0 (the version go.mod
// pins), plugins/firebase/x/session_store_test.go, under the Apache
// License 2.0 above (LICENSE_GENKIT holds its text): the five tests of
// Genkit's Firestore session store that hold for any session.Store. Left
// out, being about Firestore only: TestNewFirestoreSessionStore_-
// MissingCollection, TestFirestoreSessionStore_ExpiresAt and
// TestFirestoreSessionStore_WithTTL. Changes: setupTestSessionStore
// returns a Store of this package on the backend genkit_suite_test.go
// chooses and the agentsession store under it, in place of a Firestore
// store and client (no skip: it needs no server); ComplexState makes its
// store with newStore[NestedState](t) in place of a Firestore one; and
// Overwrite reads createdAt and updatedAt from the agentsession session
// (its header's time, and the time of the entry the last Save appended)
// in place of the Firestore document, and in place of sleeping 10 ms so
// that updatedAt is later checks that it is not earlier and that the
// second Save is a later entry whose path holds the first's.

package genkitstore_test

import (
	"context"
	"testing"
	"time"

	session "github.com/firebase/genkit/go/core/x/session"

	agentsession "github.com/agentsession/session"
	genkitstore "github.com/agentsession/session/integrations/genkit"
)

// TestState is a test state type with various field types.
type TestState struct {
	Name        string            `json:"name"`
	Count       int               `json:"count"`
	Preferences map[string]string `json:"preferences,omitempty"`
}

func setupTestSessionStore(t *testing.T) (*genkitstore.Store[TestState], agentsession.Store, func()) {
	store, backing := newStoreOn[TestState](t)
	return store, backing, func() {}
}

// createdUpdated returns, for the Overwrite test, the time the session
// was created and the time of its leaf entry (the last Save's), with
// the leaf's id.
func createdUpdated(t *testing.T, backing agentsession.Store, id string) (created, updated time.Time, leaf string) {
	t.Helper()
	s, err := agentsession.Open(context.Background(), backing, id)
	if err != nil {
		t.Fatalf("Failed to open the session: %v", err)
	}
	defer s.Close()
	e, ok := s.Entry(s.LeafID())
	if !ok {
		t.Fatal("Expected the session to have a leaf")
	}
	return s.Header().Timestamp, e.Time(), e.ID()
}

// pathHolds reports whether the path to entry leaf of session id holds
// entry earlier.
func pathHolds(t *testing.T, backing agentsession.Store, id, leaf, earlier string) bool {
	t.Helper()
	s, err := agentsession.Open(context.Background(), backing, id)
	if err != nil {
		t.Fatalf("Failed to open the session: %v", err)
	}
	defer s.Close()
	path, err := s.PathTo(leaf)
	if err != nil {
		t.Fatalf("Failed to read the path: %v", err)
	}
	for _, e := range path[:len(path)-1] {
		if e.ID() == earlier {
			return true
		}
	}
	return false
}

func TestFirestoreSessionStore_SaveAndGet(t *testing.T) {
	store, _, cleanup := setupTestSessionStore(t)
	defer cleanup()

	ctx := context.Background()
	sessionID := "test-session-save-get"

	// Initially empty
	data, err := store.Get(ctx, sessionID)
	if err != nil {
		t.Fatalf("Get failed: %v", err)
	}
	if data != nil {
		t.Errorf("Expected nil for non-existent session, got %v", data)
	}

	// Save data
	original := &session.Data[TestState]{
		ID: sessionID,
		State: TestState{
			Name:        "Alice",
			Count:       42,
			Preferences: map[string]string{"theme": "dark"},
		},
	}
	if err := store.Save(ctx, sessionID, original); err != nil {
		t.Fatalf("Save failed: %v", err)
	}

	// Retrieve data
	retrieved, err := store.Get(ctx, sessionID)
	if err != nil {
		t.Fatalf("Get failed: %v", err)
	}
	if retrieved == nil {
		t.Fatal("Expected data, got nil")
	}
	if retrieved.ID != sessionID {
		t.Errorf("Expected ID %q, got %q", sessionID, retrieved.ID)
	}
	if retrieved.State.Name != original.State.Name {
		t.Errorf("Expected Name %q, got %q", original.State.Name, retrieved.State.Name)
	}
	if retrieved.State.Count != original.State.Count {
		t.Errorf("Expected Count %d, got %d", original.State.Count, retrieved.State.Count)
	}
	if retrieved.State.Preferences["theme"] != "dark" {
		t.Errorf("Expected theme %q, got %q", "dark", retrieved.State.Preferences["theme"])
	}
}

func TestFirestoreSessionStore_Overwrite(t *testing.T) {
	store, backing, cleanup := setupTestSessionStore(t)
	defer cleanup()

	ctx := context.Background()
	sessionID := "test-session-overwrite"

	// Save initial data
	initial := &session.Data[TestState]{
		ID:    sessionID,
		State: TestState{Name: "Alice", Count: 1},
	}
	if err := store.Save(ctx, sessionID, initial); err != nil {
		t.Fatalf("Save failed: %v", err)
	}

	// Get the initial session to capture CreatedAt and UpdatedAt
	initialCreatedAt, initialUpdatedAt, initialLeaf := createdUpdated(t, backing, sessionID)

	// Overwrite with new data
	updated := &session.Data[TestState]{
		ID:    sessionID,
		State: TestState{Name: "Alice Updated", Count: 2},
	}
	if err := store.Save(ctx, sessionID, updated); err != nil {
		t.Fatalf("Save failed: %v", err)
	}

	// Get the updated session to verify timestamps
	updatedCreatedAt, updatedUpdatedAt, updatedLeaf := createdUpdated(t, backing, sessionID)

	// Verify CreatedAt is preserved (not modified during overwrite)
	if !updatedCreatedAt.Equal(initialCreatedAt) {
		t.Errorf("CreatedAt was modified during overwrite: initial=%v, after=%v", initialCreatedAt, updatedCreatedAt)
	}

	// Verify UpdatedAt is modified (should not be earlier than initial,
	// and be the time of a later entry, on whose path the initial is)
	if updatedUpdatedAt.Before(initialUpdatedAt) {
		t.Errorf("UpdatedAt should not be earlier after overwrite: initial=%v, after=%v", initialUpdatedAt, updatedUpdatedAt)
	}
	if updatedLeaf == initialLeaf || !pathHolds(t, backing, sessionID, updatedLeaf, initialLeaf) {
		t.Errorf("The overwrite should be a later entry than %s, on whose path it is: got %s", initialLeaf, updatedLeaf)
	}

	// Retrieve and verify state data
	retrieved, err := store.Get(ctx, sessionID)
	if err != nil {
		t.Fatalf("Get failed: %v", err)
	}
	if retrieved.State.Name != "Alice Updated" {
		t.Errorf("Expected Name %q, got %q", "Alice Updated", retrieved.State.Name)
	}
	if retrieved.State.Count != 2 {
		t.Errorf("Expected Count %d, got %d", 2, retrieved.State.Count)
	}
}

func TestFirestoreSessionStore_EmptyState(t *testing.T) {
	store, _, cleanup := setupTestSessionStore(t)
	defer cleanup()

	ctx := context.Background()
	sessionID := "test-session-empty"

	// Save session with zero-value state
	data := &session.Data[TestState]{
		ID:    sessionID,
		State: TestState{},
	}
	if err := store.Save(ctx, sessionID, data); err != nil {
		t.Fatalf("Save failed: %v", err)
	}

	// Retrieve and verify
	retrieved, err := store.Get(ctx, sessionID)
	if err != nil {
		t.Fatalf("Get failed: %v", err)
	}
	if retrieved == nil {
		t.Fatal("Expected data, got nil")
	}
	if retrieved.State.Name != "" {
		t.Errorf("Expected empty Name, got %q", retrieved.State.Name)
	}
	if retrieved.State.Count != 0 {
		t.Errorf("Expected zero Count, got %d", retrieved.State.Count)
	}
}

func TestFirestoreSessionStore_ComplexState(t *testing.T) {
	ctx := context.Background()

	type NestedState struct {
		Inner struct {
			Value string `json:"value"`
		} `json:"inner"`
		List []int `json:"list"`
	}

	store := newStore[NestedState](t)

	sessionID := "test-session-complex"

	// Save complex state
	state := NestedState{
		List: []int{1, 2, 3, 4, 5},
	}
	state.Inner.Value = "nested value"

	data := &session.Data[NestedState]{
		ID:    sessionID,
		State: state,
	}
	if err := store.Save(ctx, sessionID, data); err != nil {
		t.Fatalf("Save failed: %v", err)
	}

	// Retrieve and verify
	retrieved, err := store.Get(ctx, sessionID)
	if err != nil {
		t.Fatalf("Get failed: %v", err)
	}
	if retrieved == nil {
		t.Fatal("Expected data, got nil")
	}
	if retrieved.State.Inner.Value != "nested value" {
		t.Errorf("Expected Inner.Value %q, got %q", "nested value", retrieved.State.Inner.Value)
	}
	if len(retrieved.State.List) != 5 {
		t.Errorf("Expected List length %d, got %d", 5, len(retrieved.State.List))
	}
}

func TestFirestoreSessionStore_IntegrationWithSession(t *testing.T) {
	store, _, cleanup := setupTestSessionStore(t)
	defer cleanup()

	ctx := context.Background()

	// Create a session with the Firestore store
	sess, err := session.New(ctx,
		session.WithID[TestState]("integration-test"),
		session.WithInitialState(TestState{Name: "Integration", Count: 0}),
		session.WithStore(store),
	)
	if err != nil {
		t.Fatalf("New failed: %v", err)
	}

	// Update state (should persist to Firestore)
	if err := sess.UpdateState(ctx, TestState{Name: "Updated", Count: 10}); err != nil {
		t.Fatalf("UpdateState failed: %v", err)
	}

	// Load session from store
	loaded, err := session.Load(ctx, store, "integration-test")
	if err != nil {
		t.Fatalf("Load failed: %v", err)
	}

	if loaded.State().Name != "Updated" {
		t.Errorf("Expected Name %q, got %q", "Updated", loaded.State().Name)
	}
	if loaded.State().Count != 10 {
		t.Errorf("Expected Count %d, got %d", 10, loaded.State().Count)
	}
}
