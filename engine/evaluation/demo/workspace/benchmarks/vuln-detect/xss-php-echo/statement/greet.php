<?php
$name = $_GET['name'] ?? 'guest';
echo "<h1>Hello " . $_GET['name'] . "</h1>";
