// The service worker: Canopy's Web Push messages say only that something
// changed ({"canopy": {"sid": [...], "nid": "..."}}, no data), so it tells
// the open pages to fetch their changes and shows a notification.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  event.waitUntil((async () => {
    const pages = await self.clients.matchAll({type: "window", includeUncontrolled: true});
    for (const page of pages) page.postMessage({type: "changes"});
    // A push subscribed with userVisibleOnly must show something when no page is in view.
    if (!pages.some((page) => page.visibilityState === "visible")) {
      await self.registration.showNotification("Your to-do lists changed", {body: "Open the app to see what changed.", tag: "todo-changes"});
    }
  })());
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil((async () => {
    const [page] = await self.clients.matchAll({type: "window", includeUncontrolled: true});
    if (page) await page.focus();
    else await self.clients.openWindow("./");
  })());
});
