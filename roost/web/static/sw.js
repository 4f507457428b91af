// roost web's service worker: shows a push (title, body) and opens the job's page on a tap.
self.addEventListener("push", (event) => {
  let note = {};
  try { note = event.data ? event.data.json() : {}; } catch (error) { note = {body: event.data && event.data.text()}; }
  event.waitUntil(self.registration.showNotification(note.title || "roost", {
    body: note.body || "", tag: note.id || "roost", renotify: true, data: {id: note.id || null},
  }));
});
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const id = event.notification.data && event.notification.data.id;
  const url = id ? "/#job=" + encodeURIComponent(id) : "/";
  event.waitUntil(self.clients.openWindow(url));
});
