// The audio player of a unit's media (issue 41; templates/annotate/_media.html). No inline script,
// no library: buttons for play / pause, replay the last 3 s and the speed (0.75, 1, 1.25, 1.5), the
// same from the keyboard (K, J, [ and ], outside text fields), and a count of the seconds of audio
// actually played (the media clock advancing while playing; seeking is not listening), which
// annotate.js sends with the answer as `listened_ms` (window.WorkbenchMedia.listenedMs).
(function () {
  "use strict";
  var SPEEDS = [0.75, 1, 1.25, 1.5];
  var BACK_SECONDS = 3;
  var players = [];

  function clock(seconds) {
    if (!isFinite(seconds)) return "0:00";
    var s = Math.floor(seconds);
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function Player(root) {
    var audio = root.querySelector("[data-audio]");
    var play = root.querySelector("[data-audio-play]");
    var back = root.querySelector("[data-audio-back]");
    var speed = root.querySelector("[data-audio-speed]");
    var time = root.querySelector("[data-audio-time]");
    var self = {root: root, audio: audio, listened: 0};
    var last = null; // the media time at the previous tick while playing

    function show() {
      play.textContent = audio.paused ? "Play" : "Pause";
      play.setAttribute("aria-pressed", audio.paused ? "false" : "true");
      time.textContent = clock(audio.currentTime) + " / " + clock(audio.duration);
    }
    function tick() {
      if (!audio.paused && last !== null) {
        var step = audio.currentTime - last;
        // A forward step no longer than a tick can take at the fastest speed: played, not skipped.
        if (step > 0 && step < 2) self.listened += step;
      }
      root.setAttribute("data-listened-ms", String(Math.round(self.listened * 1000)));
      last = audio.paused ? null : audio.currentTime;
      show();
    }
    self.toggle = function () {
      if (audio.paused) {
        var started = audio.play();
        if (started && started.catch) started.catch(function () { show(); });
      } else {
        audio.pause();
      }
    };
    self.back = function () {
      tick();
      audio.currentTime = Math.max(0, audio.currentTime - BACK_SECONDS);
      last = null;
      if (audio.paused) self.toggle();
    };
    self.setSpeed = function (value) {
      audio.playbackRate = value;
      speed.value = String(value);
    };
    self.step = function (direction) {
      var at = SPEEDS.indexOf(Number(speed.value));
      var next = SPEEDS[Math.min(SPEEDS.length - 1, Math.max(0, (at < 0 ? 1 : at) + direction))];
      self.setSpeed(next);
    };
    play.addEventListener("click", self.toggle);
    back.addEventListener("click", self.back);
    speed.addEventListener("change", function () { self.setSpeed(Number(speed.value)); });
    audio.addEventListener("timeupdate", tick);
    audio.addEventListener("play", function () { last = audio.currentTime; show(); });
    audio.addEventListener("pause", function () { tick(); last = null; show(); });
    audio.addEventListener("ended", function () { tick(); last = null; show(); });
    audio.addEventListener("seeking", function () { tick(); last = null; });
    audio.addEventListener("loadedmetadata", show);
    show();
    return self;
  }

  function textField(target) {
    var tag = target && target.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" ||
      (tag === "INPUT" && /^(text|number|search|email|password)$/.test(target.type)) ||
      (target && target.isContentEditable);
  }

  document.querySelectorAll("[data-audio-player]").forEach(function (root) { players.push(Player(root)); });
  if (!players.length) return;

  // Capture phase: the player's keys are its own, before the protocol's shortcuts see them.
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || textField(event.target)) return;
    var player = players[0];
    var key = event.key;
    if (key === "k" || key === "K") player.toggle();
    else if (key === "j" || key === "J") player.back();
    else if (key === "[") player.step(-1);
    else if (key === "]") player.step(1);
    else return;
    event.preventDefault();
    event.stopPropagation();
  }, true);

  window.WorkbenchMedia = {
    players: players,
    // Milliseconds of audio played on this page, all players together.
    listenedMs: function () {
      var total = 0;
      players.forEach(function (p) { total += p.listened; });
      return Math.round(total * 1000);
    }
  };
})();
