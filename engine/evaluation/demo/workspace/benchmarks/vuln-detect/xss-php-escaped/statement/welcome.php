<?php
$name = $_GET['name'] ?? 'guest';
echo "<h1>Hello " . htmlspecialchars($_GET['name'] ?? 'guest', ENT_QUOTES, 'UTF-8') . "</h1>";
