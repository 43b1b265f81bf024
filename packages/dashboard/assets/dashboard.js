// @loom/dashboard page script: live updates and a confirmation on dangerous buttons.
// Served as a file (the Content-Security-Policy allows no inline script); no framework, no build.
(function () {
  'use strict';

  // Buttons whose form says data-confirm ask first.
  document.addEventListener('submit', function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });

  var url = document.body.dataset.events;
  var status = document.getElementById('live-status');
  if (!url || typeof EventSource === 'undefined') return;

  var refreshing = false;
  var again = false;

  // Open <details> (stacks, step results) stay open across a swap: remembered by position.
  function openDetails(root) {
    var open = [];
    root.querySelectorAll('details').forEach(function (d, i) {
      if (d.open) open.push(i);
    });
    return open;
  }
  function reopen(root, open) {
    var all = root.querySelectorAll('details');
    open.forEach(function (i) {
      if (all[i]) all[i].open = true;
    });
  }

  // The server said this page's data changed: fetch the page again and swap each live part whose
  // content differs. The page is the server's escaped HTML, parsed inertly (DOMParser runs no script).
  function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    fetch(window.location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin', cache: 'no-store' })
      .then(function (res) {
        return res.ok ? res.text() : null;
      })
      .then(function (text) {
        if (text === null) return;
        var doc = new DOMParser().parseFromString(text, 'text/html');
        doc.querySelectorAll('[data-live][id]').forEach(function (fresh) {
          var current = document.getElementById(fresh.id);
          if (!current || current.innerHTML === fresh.innerHTML) return;
          var open = openDetails(current);
          var node = document.importNode(fresh, true);
          current.replaceWith(node);
          reopen(node, open);
        });
        document.title = doc.title;
        document.body.dataset.updates = String(Number(document.body.dataset.updates || '0') + 1);
      })
      .catch(function () {
        /* the next change tries again */
      })
      .then(function () {
        refreshing = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  var source = new EventSource(url);
  source.addEventListener('open', function () {
    if (status) status.dataset.state = 'on';
  });
  source.addEventListener('error', function () {
    if (status) status.dataset.state = 'off';
  });
  source.addEventListener('change', refresh);
})();
