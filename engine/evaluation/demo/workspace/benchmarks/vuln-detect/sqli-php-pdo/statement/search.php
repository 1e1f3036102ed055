<?php
$pdo = new PDO('sqlite:/var/lib/shop/shop.db');
$stmt = $pdo->prepare('SELECT name FROM products WHERE name LIKE ?');
$stmt->execute(['%' . $_GET['q'] . '%']);
foreach ($stmt->fetchAll() as $row) {
    echo htmlspecialchars($row['name']), "\n";
}
