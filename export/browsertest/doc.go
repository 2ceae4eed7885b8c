// Package browsertest opens the HTML export of package export in a real
// headless Chromium (through the DevTools protocol, with chromedp) and
// checks what a reader sees: the text renders with no console error,
// branches switch from the side panel, tool output folds, the page fits
// a phone's width, and the W10k session opens fast with only a window of
// its entries in the DOM.
//
// It is a module of its own so that the browser driver never becomes a
// dependency of the library. The tests skip, saying why, when no Chromium
// is found: they look for $AGENTSESSION_CHROME, then chromium,
// chromium-browser, google-chrome and /usr/bin/chromium. With
// AGENTSESSION_SCREENSHOTS=dir they also save their screenshots in dir.
package browsertest
